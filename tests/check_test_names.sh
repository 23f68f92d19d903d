#!/usr/bin/env bash
# CTest guard (test_names): catch_discover_tests cuts a Catch test case name at ';' into two
# CTest tests that match no case, and Catch then reports "No tests ran", which passes: the case
# never runs. A name that starts with '-' is read by Catch as an option ("Unrecognised token").
# Fails, naming each such case, if any test binary given has one.
set -uo pipefail
bad=0
for bin in "$@"; do
  while IFS= read -r name; do
    echo "$(basename "$bin"): test case name has a ';' or starts with '-' (CTest cannot run it): $name"
    bad=1
  done < <("$bin" --list-test-names-only | grep -E ';|^-')
done
((bad == 0)) && echo "no test case name has a ';' or a leading '-' ($# binaries)"
exit $bad
