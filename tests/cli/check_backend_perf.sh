#!/usr/bin/env bash
# `kiln check-backend --perf`: the output's structure only (timings depend
# on the machine and its load, so none is checked). On cpu: a line per
# selected op (its largest case) and per GPT-2-small shape, each with a
# time and a GB/s or GFLOP/s figure; against another backend (the
# "execfaults" test plugin, the cpu plugin under another name) a "vs cpu"
# ratio column.
# Usage: check_backend_perf.sh <path-to-kiln> [<bad-plugin-dir>]
set -u
kiln=$1
plugin="$(cd "$(dirname "$kiln")/.." && pwd)/test-plugins/libkiln-backend-execfaults.so"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KILN_CACHE_DIR=$tmp/cache

fail=0
check() {  # check <description> <command...>
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what" >&2
    fail=1
  fi
}

number='[0-9]+\.[0-9]+'
"$kiln" check-backend cpu --perf --perf-runs 2 --filter gelu,layernorm >"$tmp/cpu.txt" 2>&1
status=$?
cat "$tmp/cpu.txt"
check "--perf on cpu exits 0 (got $status)" test "$status" -eq 0
check "it says how it measures" grep -Eq '^perf: median of 2 runs \(fewer past 2 s\) after one warm-up' "$tmp/cpu.txt"
for op in gelu gelu_grad layernorm layernorm_grad; do
  check "a line for $op with us/run and GB/s" grep -Eq "^$op +$number +[12] +- +$number +$op " "$tmp/cpu.txt"
done
check "GPT-2-small shapes: layernorm [1024, 768]" grep -Eq "^gpt layernorm +$number +[12] +- +$number +\[1024, 768\]$" "$tmp/cpu.txt"
check "GPT-2-small shapes: gelu [1024, 3072]" grep -Eq "^gpt gelu +$number .*\[1024, 3072\]$" "$tmp/cpu.txt"
check "no other op is timed" test "$(grep -E "^(gpt )?[a-z_]+ +$number " "$tmp/cpu.txt" | grep -Evc "^(gpt )?(gelu|layernorm)")" -eq 0
check "a summary" grep -Eq '^perf summary: [0-9]+ cases timed, 0 unsupported, 0 failed$' "$tmp/cpu.txt"

"$kiln" check-backend "$plugin" --perf --perf-runs 2 --filter matmul >"$tmp/other.txt" 2>&1
status=$?
cat "$tmp/other.txt"
check "--perf on another backend exits 0 (got $status)" test "$status" -eq 0
check "matmul reports GFLOP/s and a ratio to cpu" grep -Eq "^matmul +$number +[12] +$number +- +${number}x +matmul " "$tmp/other.txt"
check "the GPT-2-small attention scores" grep -Eq "^gpt matmul +$number +[12] +$number +- +${number}x +attention scores" "$tmp/other.txt"
check "a summary with the overall ratio" grep -Eq "^perf summary: 3 cases timed, .*together ${number}x cpu$" "$tmp/other.txt"

"$kiln" check-backend cpu --perf --filter no-such-op >"$tmp/none.txt" 2>&1
status=$?
check "a filter that selects nothing is an error (status 1, got $status)" test "$status" -eq 1
check "saying so" grep -q "no op or GPT shape matches --filter" "$tmp/none.txt"

exit $fail
