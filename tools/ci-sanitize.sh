#!/usr/bin/env bash
# CI's sanitizer and fuzzing job (.ci/run runs it after the normal tests; runs alone too): ASan +
# UBSan over the ir, codegen, Sim and runtime tests and a few reduced launches, then libFuzzer on
# each reader. Fails on any report; what it runs and why: docs/verification.md.
# Options: --no-fuzz (build and tests only), --fuzz-only (the fuzzers only, on an existing build-asan).
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
fuzz_seconds=${MONOGEN_FUZZ_SECONDS:-60}
do_build=1 do_tests=1 do_fuzz=1
for a in "$@"; do
  case "$a" in
    --no-fuzz) do_fuzz=0 ;;
    --fuzz-only) do_build=0 do_tests=0 ;;
    *) echo "usage: $0 [--no-fuzz | --fuzz-only]" >&2; exit 2 ;;
  esac
done
t0=$(date +%s)
step() { echo "== sanitize: $* ($(($(date +%s) - t0)) s)"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/monogen-sanitize.XXXXXX")
keep_tmp=0
trap '[ "$keep_tmp" = 1 ] || rm -rf "$tmp"' EXIT

unit_labels='^test_(ir|codegen|codegen_numerics|sim|sim_adapter|generator|runtime_.*)$|^fuzz$'
# The reduced-config launches: the all-reduce and the robust handshake on the Sim, the launch
# inputs, a launch through safetensors, and whole FFN launches and the cache through the
# binary. (The rest take 10 s to 10 min each under ASan: test_spec_ffn, the S x TP sweeps.)
spec_regex='^(allreduce sim: a rank on a stale tag|launch inputs: padded rows|bytes model: the Sim device reads'
spec_regex+='|save launch: |robust sim: a fault before the handshake|robust sim: the trace has every CTA'
spec_regex+='|monogen sim: an injected stall|sim --sum: |sim --experts with --padded-rows|the cache: a miss compiles)'
test_targets=(monogen test_ir test_codegen test_codegen_numerics test_sim test_generator
              test_runtime_cache test_runtime_device test_runtime_keyhash test_runtime_launch
              test_runtime_safetensors test_runtime_trace test_sim_adapter
              test_spec_allreduce test_spec_inputs test_spec_robust test_cli)
fuzzers=(fuzz_safetensors fuzz_config fuzz_cache_entry fuzz_numeric_flag)

if ((do_build)); then
  step "configuring build-asan (clang++-22, MONOGEN_SANITIZE=ON, MONOGEN_FUZZ=ON)"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-22 \
        -DMONOGEN_SANITIZE=ON -DMONOGEN_FUZZ=ON >/dev/null
  step "building ${#test_targets[@]} test targets and ${#fuzzers[@]} fuzzers"
  cmake --build build-asan -j"$(nproc)" --target "${test_targets[@]}" "${fuzzers[@]}"
fi

if ((do_tests)); then
  # use_sigaltstack=0: ASan 22 dies unmapping the alternate signal stacks LLVM gives compiling
  # threads (a compiler-rt bug, fixed after 22; docs/verification.md).
  mkdir -p "$tmp/reports"
  export ASAN_OPTIONS="use_sigaltstack=0:detect_leaks=1:log_path=$tmp/reports/asan"
  export UBSAN_OPTIONS="print_stacktrace=1:log_path=$tmp/reports/ubsan"
  status=0
  step "ir, codegen, Sim, runtime tests and the fuzz corpora under ASan + UBSan"
  ctest --test-dir build-asan -L "$unit_labels" -j2 --output-on-failure --timeout 600 || status=1
  step "reduced-config spec launches under ASan + UBSan"
  ctest --test-dir build-asan -R "$spec_regex" -j2 --output-on-failure --timeout 900 || status=1
  unset ASAN_OPTIONS UBSAN_OPTIONS
  if compgen -G "$tmp/reports/*" >/dev/null; then
    echo "== sanitize: sanitizer reports (from the tests or the processes they ran):"
    for f in "$tmp"/reports/*; do echo "--- $f"; cat "$f"; done
    status=1
  else
    echo "== sanitize: 0 sanitizer reports"
  fi
  ((status == 0)) || { echo "== sanitize: FAILED (tests or sanitizer reports)"; exit 1; }
fi

if ((do_fuzz)); then
  slots=$(nproc)
  step "fuzzing ${fuzzers[*]} for ${fuzz_seconds} s each, ${slots} at a time"
  declare -A name_of=()
  passed=0 failed=0
  report() {  # $1: fuzzer, $2: its exit status
    local f=$1
    if (($2 == 0)); then
      passed=$((passed + 1))
      echo "-- $f: $(grep -E '^Done [0-9]+ runs' "$tmp/$f/log" || echo '?'), $(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "$tmp/$f/log" | tail -1), $(awk '/stat::peak_rss_mb/ {print "peak rss", $2, "MB"}' "$tmp/$f/log")"
      return
    fi
    failed=$((failed + 1))
    keep_tmp=1
    echo "-- $f FAILED (exit $2); the end of its log:"
    tail -n 80 "$tmp/$f/log"
    for a in "$tmp/$f/artifacts"/*; do
      [ -e "$a" ] || continue
      echo "-- $f: $(basename "$a") ($(stat -c %s "$a") bytes), base64 (keep it as tests/fuzz/corpus/$f/regress-...):"
      base64 -w 0 "$a" | head -c 20000
      echo
    done
  }
  reap() {  # waits for one fuzzer to end and reports it
    local pid rc=0
    wait -n -p pid || rc=$?
    report "${name_of[$pid]}" "$rc"
    unset "name_of[$pid]"
  }
  for f in "${fuzzers[@]}"; do
    ((${#name_of[@]} < slots)) || reap
    mkdir -p "$tmp/$f/corpus" "$tmp/$f/artifacts"
    # New inputs go to the first corpus dir (the temp one); the seed corpus is only read.
    build-asan/tests/fuzz/"$f" -max_total_time="$fuzz_seconds" -timeout=10 -malloc_limit_mb=1024 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$tmp/$f/artifacts/" \
      "$tmp/$f/corpus" "tests/fuzz/corpus/$f" >"$tmp/$f/log" 2>&1 &
    name_of[$!]=$f
  done
  while ((${#name_of[@]})); do reap; done
  echo "fuzz: $passed passed, $failed failed"
  ((failed == 0)) || { echo "== sanitize: FAILED (fuzzers); logs and inputs kept in $tmp"; exit 1; }
fi
step "done"
