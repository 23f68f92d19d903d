#!/usr/bin/env bash
# CI's executor job (.ci/run runs it after the tests; runs alone too): `monogen check --device
# gfx950-run --config reduced --no-cache` over the default variant's S x TP matrix plus the other
# scale layout and input, the attention launch (S=8 TP=4, context 129) in vllm / sparse and atom /
# full, and the one-launch layer (TP=2, context 129: S=4 vllm / sparse, S=3 atom / full), one line a
# variant. The matrix and its times: docs/verification.md.
# Options: --full (S in {1, 3, 8, 9, 16}: the 15-variant matrix, not run by CI).
set -euo pipefail
cd "$(dirname "$0")/.."
rows=(1 8 16)
for a in "$@"; do
  case "$a" in
    --full) rows=(1 3 8 9 16) ;;
    *) echo "usage: $0 [--full]" >&2; exit 2 ;;
  esac
done
tps=(1 2 4)
seed=1
jobs=${MONOGEN_EXECUTOR_JOBS:-1}
tool=${MONOGEN_GFX950_RUN:-$(cd .. && pwd)/shared/tools/gfx950-run}
if [ ! -x "$tool" ]; then
  echo "== executor: no gfx950-run at $tool (set MONOGEN_GFX950_RUN): the executor check is skipped"
  exit 0
fi
export MONOGEN_GFX950_RUN=$tool
monogen=$PWD/build/tools/monogen
[ -x "$monogen" ] || { echo "== executor: $monogen is not built" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/monogen-executor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
variants=()
for S in "${rows[@]}"; do
  for TP in "${tps[@]}"; do variants+=("$S $TP ffn e8m0_shuffle attn"); done
done
variants+=("8 2 ffn rowmajor attn")
variants+=("8 2 ffn e8m0_shuffle part")
variants+=("8 4 attention vllm sparse")  # fields 4, 5: --scales, --input (ffn); --cache, --layer-type (attention)
variants+=("8 4 attention atom full")
variants+=("4 2 layer vllm sparse")  # fields 4, 5 as the attention launch's
variants+=("3 2 layer atom full")
echo "== executor: ${#variants[@]} variants on $tool, $jobs at a time"

# One check: its output to $tmp/<i>.log, then "<milliseconds> <exit code>" to $tmp/<i>.done.
check_one() {
  local i=$1 S=$2 TP=$3 launch=$4 a=$5 b=$6 t0 rc=0 knobs
  if [ "$launch" != ffn ]; then knobs=(--launch "$launch" --context 129 --cache "$a" --layer-type "$b")
  else knobs=(--scales "$a" --input "$b"); fi
  t0=$(date +%s%N)
  "$monogen" check --device gfx950-run --config reduced --rows "$S" --tp "$TP" "${knobs[@]}" --seed "$seed" --no-cache \
    >"$tmp/$i.log" 2>&1 || rc=$?
  echo "$((($(date +%s%N) - t0) / 1000000)) $rc" >"$tmp/$i.done.part"
  mv "$tmp/$i.done.part" "$tmp/$i.done"
}
export -f check_one
export monogen seed tmp

t0=$(date +%s)
for i in "${!variants[@]}"; do echo "$i ${variants[$i]}"; done |
  xargs -P "$jobs" -L 1 bash -c 'check_one "$@"' _ &
launcher=$!

failed=0
for i in "${!variants[@]}"; do
  read -r S TP launch a b <<<"${variants[$i]}"
  while [ ! -e "$tmp/$i.done" ]; do
    kill -0 "$launcher" 2>/dev/null || [ -e "$tmp/$i.done" ] || { echo "== executor: the launcher died" >&2; exit 1; }
    sleep 0.5
  done
  read -r ms rc <"$tmp/$i.done"
  verdict=$(sed -n 's/^verdict: //p' "$tmp/$i.log" | tail -1)
  [ -n "$verdict" ] || verdict="no verdict"
  regs=$(sed -n 's/^code object: [0-9]* bytes, \([0-9]* VGPR, [0-9]* SGPR\).*/, \1/p' "$tmp/$i.log" | tail -1)
  printf '  S=%-2s TP=%s %-9s %-12s %-6s  %4d.%d s  %s (exit %s%s)\n' "$S" "$TP" "$launch" "$a" "$b" $((ms / 1000)) $((ms % 1000 / 100)) "$verdict" "$rc" "$regs"
  if [ "$rc" != 0 ]; then
    failed=$((failed + 1))
    sed 's/^/    | /' "$tmp/$i.log" | tail -40
  fi
done
wait "$launcher" || true
echo "== executor: ${#variants[@]} checks in $(($(date +%s) - t0)) s, $failed failed"
[ "$failed" = 0 ]
