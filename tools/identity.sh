#!/usr/bin/env bash
# The generator's output, pinned: the SHA-256 of every variant's Plan + kernel IR and of its ISA
# over the FFN launch's reduced matrix, knob variants and full S=8 TP=4, and a set of attention
# and layer variants (reduced, and one at full dims each), compared with
# tests/golden/identity.sha256. A refactoring must leave it unchanged; a change to the kernel
# regenerates it with --write and says why in its commit.
# Usage: tools/identity.sh [--write] [--monogen PATH] [--jobs N]
set -euo pipefail
cd "$(dirname "$0")/.."
golden=tests/golden/identity.sha256
monogen=$PWD/build/tools/monogen
write=0
jobs=$(nproc)
while (($#)); do
  case "$1" in
    --write) write=1 ;;
    --monogen) monogen=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    *) echo "usage: $0 [--write] [--monogen PATH] [--jobs N]" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$monogen" ] || { echo "identity: $monogen is not built" >&2; exit 1; }

# One line a variant: its name, then the monogen flags that make it.
variants=()
for S in 1 3 4 5 8 9 16; do
  for TP in 1 2 4 8; do variants+=("reduced-S$S-TP$TP|--config reduced --rows $S --tp $TP"); done
done
variants+=("reduced-S8-TP2-part|--config reduced --rows 8 --tp 2 --input part"
           "reduced-S8-TP2-rowmajor|--config reduced --rows 8 --tp 2 --scales rowmajor"
           "reduced-S8-TP2-shared|--config reduced --rows 8 --tp 2 --sum shared"
           "reduced-S8-TP2-trace|--config reduced --rows 8 --tp 2 --trace"
           "reduced-S2-TP4-part-rowmajor|--config reduced --rows 2 --tp 4 --input part --scales rowmajor"
           "full-S8-TP4|--config full --rows 8 --tp 4")
for v in "S1-TP1|--rows 1 --tp 1" "S4-TP4|--rows 4 --tp 4" "S8-TP4-atom|--rows 8 --tp 4 --cache atom" \
         "S3-TP8-full|--rows 3 --tp 8 --layer-type full" "S16-TP2-atom-full|--rows 16 --tp 2 --cache atom --layer-type full"; do
  for launch in attention layer; do variants+=("$launch-reduced-${v%%|*}|--launch $launch --config reduced ${v#*|}"); done
done
variants+=("attention-full-S8-TP4|--launch attention --config full --rows 8 --tp 4"
           "layer-full-S2-TP4|--launch layer --config full --rows 2 --tp 4")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/monogen-identity.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
one() {  # name|flags -> "<sha ir> <sha isa> name" in $tmp/name
  local name=${1%%|*} flags=${1#*|}
  # shellcheck disable=SC2086
  local ir isa
  ir=$("$monogen" dump $flags --what ir | sha256sum | cut -c1-64)
  isa=$("$monogen" dump $flags --what isa | sha256sum | cut -c1-64)
  echo "$name ir $ir" > "$tmp/$name"
  echo "$name isa $isa" >> "$tmp/$name"
}
export -f one
export monogen tmp
printf '%s\n' "${variants[@]}" | xargs -P "$jobs" -I{} bash -c 'one "$@"' _ {}
out=$tmp/all
for v in "${variants[@]}"; do cat "$tmp/${v%%|*}"; done > "$out"
if ((write)); then
  cp "$out" "$golden"
  echo "identity: wrote $golden ($(wc -l < "$golden") hashes)"
  exit 0
fi
if diff -u "$golden" "$out"; then
  echo "identity: ${#variants[@]} variants' IR and ISA unchanged"
else
  echo "identity: the generator's output changed (lines above: - pinned, + now)" >&2
  exit 1
fi
