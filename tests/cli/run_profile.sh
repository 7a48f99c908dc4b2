#!/usr/bin/env bash
# `kiln train --profile` (and KILN_PROFILE=1): the table of where the time
# went (graph/run_profile.h), over the iterations after the first. Timings
# depend on the machine, so the checks are on what must hold anywhere: on
# cpu, time in the cpu plugin (> 0) and no fallback or copies; on a split
# run (the "faults" test plugin, the cpu plugin under another name, with
# KILN_TEST_MAX_ELEMENTS sending its large matmuls to the cpu fallback),
# time on both devices and in copies both ways with their bytes, and a top
# piece on the fallback holding a matmul. Profiling changes no result: the
# losses match the unprofiled run's.
# Usage: run_profile.sh <path-to-kiln> [<bad-plugin-dir>]
set -euo pipefail
kiln=$1
export KILN_PLUGIN_PATH
KILN_PLUGIN_PATH="$(cd "$(dirname "$kiln")/.." && pwd)/test-plugins"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KILN_CACHE_DIR=$tmp/cache
fail() { echo "FAIL: $*" >&2; exit 1; }
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --micro-batch-size 2
       --global-batch-size 4 --train-iters 3 --eval-iters 0 --log-interval 1 --num-threads 1)
losses() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2 | tr '\n' ' '; }
# The ms column of the summary row named $1 (empty if there is none).
ms_of() { sed -n "s/^  $1  *\([0-9.]*\) .*/\1/p" "$2"; }
mib_of() { sed -n "s/^  $1  *[0-9.]*  *[0-9.]*%  *[0-9]*  *\([0-9.]*\)$/\1/p" "$2"; }
positive() { awk -v x="$1" 'BEGIN { exit !(x != "" && x > 0) }'; }
present() { awk -v x="$1" 'BEGIN { exit !(x != "" && x >= 0) }'; }

# Unprofiled: no table.
"$kiln" train "${model[@]}" --metrics-file "$tmp/plain.jsonl" >"$tmp/plain.log" 2>"$tmp/plain.err" ||
  { cat "$tmp/plain.log" "$tmp/plain.err"; fail "cpu run"; }
! grep -q "^kiln profile" "$tmp/plain.log" || fail "a table without --profile"

"$kiln" train "${model[@]}" --profile --metrics-file "$tmp/cpu.jsonl" >"$tmp/cpu.log" 2>"$tmp/cpu.err" ||
  { cat "$tmp/cpu.log" "$tmp/cpu.err"; fail "cpu --profile run"; }
cat "$tmp/cpu.log"
# The first iteration's one-time costs are set aside, and said so.
grep -Eq "^kiln profile: iterations 2-3 \(iteration 1, [0-9.]+ ms with its one-time costs, left out\), [0-9.]+ ms of wall time$" \
  "$tmp/cpu.log" || fail "no profile title"
positive "$(ms_of "cpu plugin" "$tmp/cpu.log")" || fail "no time in the cpu plugin"
present "$(ms_of "host, outside the graphs" "$tmp/cpu.log")" || fail "no host row"
! grep -Eq "^  (cpu fallback|copies) " "$tmp/cpu.log" || fail "fallback or copies on an all-cpu run"
grep -q "^  top pieces by time" "$tmp/cpu.log" || fail "no top pieces"
grep -Eq "^ +[0-9.]+ +[0-9.]+% +[0-9]+ +[0-9]+  cpu plugin +first micro-batch: layer forward +.*matmul x" \
  "$tmp/cpu.log" || fail "no layer-forward piece with its ops"
# The cpu backend's per-op table comes with it (KILN_CPU_PROFILE).
grep -q "^kiln cpu profile (1 threads, " "$tmp/cpu.err" || fail "no cpu per-op table"
[ "$(losses "$tmp/cpu.jsonl")" = "$(losses "$tmp/plain.jsonl")" ] || fail "profiling changed the losses"

# The split run, asked for through the environment. The faults plugin's
# buffers are the cpu plugin's host memory, which the fallback would share
# (ABI 1.5, cli.host_memory_plugin): KILN_SHARE_HOST_MEMORY=0 keeps the copies
# whose rows this checks.
KILN_SHARE_HOST_MEMORY=0 KILN_PROFILE=1 KILN_TEST_MAX_ELEMENTS=2048 "$kiln" train "${model[@]}" --backend faults >"$tmp/split.log" 2>&1 ||
  { cat "$tmp/split.log"; fail "split --profile run"; }
grep -A30 "^kiln profile" "$tmp/split.log"
positive "$(ms_of "faults plugin" "$tmp/split.log")" || fail "no time in the plugin"
positive "$(ms_of "cpu fallback" "$tmp/split.log")" || fail "no time on the fallback"
for way in "faults -> cpu" "cpu -> faults"; do
  present "$(ms_of "copies $way" "$tmp/split.log")" || fail "no copies $way row"
  positive "$(mib_of "copies $way" "$tmp/split.log")" || fail "no bytes copied $way"
done
grep -Eq "^ +[0-9.]+ +[0-9.]+% +[0-9]+ +[0-9]+  cpu fallback +.*matmul x" "$tmp/split.log" ||
  fail "no top piece on the fallback"
# The shares are of one wall time: together at most 100%.
awk '/^kiln profile/ { on = 1; next } /^  top pieces/ { on = 0 } on && /%/ { for (i = 1; i <= NF; ++i)
  if ($i ~ /%$/) s += $i } END { exit !(s > 0 && s <= 100.5) }' "$tmp/split.log" || fail "shares beyond 100%"
echo "PASS: --profile tables on cpu and on a split run"
