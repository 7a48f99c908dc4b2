#!/usr/bin/env bash
# Plugin ABI 1.2's support answers and compile refusals (issue 19):
# - a compile that returns KILN_ERR_UNSUPPORTED runs that piece on the cpu
#   fallback: train succeeds, loses nothing against cpu, and no .failed
#   marker is left (a capability gap is not a failure), and precompile
#   counts it as a fallback, not a failed compilation;
# - an empty executable returned as success is a plugin error naming the
#   plugin, and never a cache entry;
# - op_supported_node sees shapes: a matmul limit sends just the large
#   matmuls to the fallback.
source "$(dirname "$0")/common.bash"
metrics() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2 | tr '\n' ' '; }

"$kiln" train "${model[@]}" --backend cpu --cache-dir "$tmp/cpu" --metrics-file "$tmp/cpu.jsonl" >"$tmp/cpu.log" 2>&1 ||
  { cat "$tmp/cpu.log"; fail "cpu run"; }

[ -n "$(metrics "$tmp/cpu.jsonl")" ] || fail "no losses in the cpu metrics"
KILN_TEST_COMPILE_UNSUPPORTED=1 "$kiln" train "${model[@]}" --backend faults --cache-dir "$tmp/unsup" \
  --metrics-file "$tmp/unsup.jsonl" >"$tmp/unsup.log" 2>&1 || { cat "$tmp/unsup.log"; fail "refused compiles must fall back"; }
grep -q "faults: a graph piece of [0-9]* nodes runs on the cpu fallback: .*cannot run this graph" "$tmp/unsup.log" ||
  { cat "$tmp/unsup.log"; fail "the refusal is not logged"; }
[ "$(count_files "$tmp/unsup" '*.failed')" = 0 ] || fail "a refused compile left a failure marker"
[ "$(metrics "$tmp/unsup.jsonl")" = "$(metrics "$tmp/cpu.jsonl")" ] ||
  fail "losses on the fallback ($(metrics "$tmp/unsup.jsonl")) differ from cpu's ($(metrics "$tmp/cpu.jsonl"))"

# precompile counts such refusals as fallbacks, not failures, and exits 0.
KILN_TEST_COMPILE_UNSUPPORTED=1 "$kiln" precompile "${model[@]}" --backend faults --cache-dir "$tmp/pre" \
  >"$tmp/pre.log" 2>&1 || { cat "$tmp/pre.log"; fail "precompile must not fail on unsupported graphs"; }
grep -q "^Total failed compilations: 0$" "$tmp/pre.log" || { cat "$tmp/pre.log"; fail "refusals counted as failures"; }
grep -Eq "^Unsupported by the backend \(run on the cpu fallback\): [1-9][0-9]* \([1-9][0-9]* refused at compile\); ops: .*matmul" \
  "$tmp/pre.log" || { cat "$tmp/pre.log"; fail "precompile does not count the fallbacks and name their ops"; }
grep -q "^precompile: unsupported, runs on the cpu fallback: .*cannot run this graph" "$tmp/pre.log" ||
  { cat "$tmp/pre.log"; fail "no line naming the refused graph"; }
[ "$(count_files "$tmp/pre" '*.failed')" = 0 ] || fail "a refused precompile left a failure marker"

set +e
KILN_TEST_COMPILE_EMPTY=1 "$kiln" train "${model[@]}" --backend faults --cache-dir "$tmp/empty" >"$tmp/empty.log" 2>&1
status=$?
set -e
[ "$status" = 1 ] || { cat "$tmp/empty.log"; fail "an empty executable must fail the run (status $status)"; }
grep -q "^kiln: error: plugin faults (.*libkiln-backend-faults.so) returned an empty executable for a graph" \
  "$tmp/empty.log" || { cat "$tmp/empty.log"; fail "no one-line error naming the plugin"; }
[ "$(count_files "$tmp/empty" '*.entry')" = 0 ] || fail "an empty executable became a cache entry"

# hidden 32, seq 16, micro-batch 2: the 32x128 MLP weights (4096 elements)
# and their activations exceed 2048; the 32x32 attention projections do not.
KILN_TEST_MAX_ELEMENTS=2048 "$kiln" train "${model[@]}" --backend faults --cache-dir "$tmp/limit" \
  --metrics-file "$tmp/limit.jsonl" >"$tmp/limit.log" 2>&1 || { cat "$tmp/limit.log"; fail "size-limited run"; }
grep -q "faults: matmul runs on the cpu fallback ([0-9]* nodes per iteration)" "$tmp/limit.log" ||
  { cat "$tmp/limit.log"; fail "large matmuls did not fall back"; }
grep -Eq "split: train step .*: [0-9]+ ops on faults, [0-9]+ on cpu" "$tmp/limit.log" || fail "no split logged"
# Some matmuls stay on the plugin: fewer matmuls fall back than with no matmul at all.
limited=$(grep -o "matmul runs on the cpu fallback ([0-9]*" "$tmp/limit.log" | grep -o "[0-9]*$")
all=$(grep -o "matmul runs on the cpu fallback ([0-9]*" "$tmp/unsup.log" | grep -o "[0-9]*$")
[ "$limited" -lt "$all" ] || fail "$limited of $all matmuls fell back: the limit did not see shapes"
echo "PASS: refused compiles fall back unrecorded; empty executables are errors; shape limits split matmuls ($limited of $all fall back)"
