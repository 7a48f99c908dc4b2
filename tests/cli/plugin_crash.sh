#!/usr/bin/env bash
# A plugin that crashes, aborts, throws or hangs in execute (the "execfaults"
# test plugin, tests/plugins/execute_faults.cpp, for graphs holding one op):
# check-backend names the case, the signal and the call, reports every other
# op as usual and counts the crash as a failure; `kiln train` ends with one
# line naming the plugin and the call, and so does `kiln generate`.
# Usage: plugin_crash.sh <path-to-kiln> [<bad-plugin-dir>]
# Not run under ASan/UBSan (CMakePresets.json): the sanitizers handle the
# deliberate crash first (docs/CONTRIBUTING.md).
# Not under ASan: it crashes on purpose, and the sanitizers' own fatal-signal
#   handlers, installed first, report and exit 1 before kiln's one-line report
#   and re-raise can be checked.
set -u
kiln=$1
plugin="$(cd "$(dirname "$kiln")/.." && pwd)/test-plugins/libkiln-backend-execfaults.so"
if [ ! -f "$plugin" ]; then
  echo "FAIL: the execfaults test plugin is not built at $plugin" >&2
  exit 1
fi
ulimit -c 0  # crashing on purpose: no core files
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

# The whole suite with silu crashing: one failed group per op whose cases
# hold silu, every other group reported as on the cpu plugin.
"$kiln" check-backend cpu >"$tmp/cpu.txt" 2>&1
KILN_TEST_CRASH_OP=silu "$kiln" check-backend "$plugin" >"$tmp/segv.txt" 2>&1
status=$?
cat "$tmp/segv.txt"
check "check-backend exits with the failed ops (2, got $status)" test "$status" -eq 2
check "the silu group fails naming its first case, the signal and the call" \
  grep -Eq '^FAIL +silu +[0-9]+ cases .*first: silu \[1\]: crashed the case process with SIGSEGV \(Segmentation fault\) during execute' "$tmp/segv.txt"
check "silu_grad's SwiGLU case (which holds silu) fails too" \
  grep -Eq '^FAIL +silu_grad .*[0-9]+ failed; first: silu_grad in SwiGLU.*SIGSEGV' "$tmp/segv.txt"
check "every group is reported (as many lines as on cpu)" \
  test "$(grep -Ec '^(PASS|FAIL|UNSUPPORTED|HOST) ' "$tmp/segv.txt")" -eq "$(grep -Ec '^(PASS|FAIL|UNSUPPORTED|HOST) ' "$tmp/cpu.txt")"
check "the other groups pass" test "$(grep -Ec '^FAIL ' "$tmp/segv.txt")" -eq 2
check "the summary counts the crash as a failure" grep -Eq '^summary: [0-9]+ passed, 2 failed' "$tmp/segv.txt"

# abort(), an exception, a hang past --case-timeout; and cases merged into one
# graph (--batch 0), which a crash splits to find the culprit.
KILN_TEST_CRASH_OP=silu KILN_TEST_CRASH_HOW=abort "$kiln" check-backend "$plugin" --filter silu >"$tmp/abort.txt" 2>&1
check "abort() is reported as SIGABRT" grep -Eq '^FAIL +silu .*SIGABRT \(Aborted\) during execute' "$tmp/abort.txt"
KILN_TEST_CRASH_OP=silu KILN_TEST_CRASH_HOW=throw "$kiln" check-backend "$plugin" --filter silu >"$tmp/throw.txt" 2>&1
check "an escaping exception names the plugin and the call" \
  grep -Eq "^FAIL +silu .*execfaults: execute let a C\+\+ exception escape: execfaults: a deliberate exception" "$tmp/throw.txt"
KILN_TEST_CRASH_OP=silu KILN_TEST_CRASH_HOW=hang "$kiln" check-backend "$plugin" --filter silu_grad --case-timeout 0.3 \
  >"$tmp/hang.txt" 2>&1
check "a hang fails its case after --case-timeout" \
  grep -Eq '^FAIL +silu_grad .*[0-9]+ failed; first: silu_grad in SwiGLU.*no result within 0.3 s' "$tmp/hang.txt"
KILN_TEST_CRASH_OP=silu "$kiln" check-backend "$plugin" --filter silu,gelu --batch 0 >"$tmp/batch.txt" 2>&1
check "a crash in a merged graph is traced to its cases" \
  grep -Eq '^FAIL +silu +([0-9]+) cases .*\1 failed; first: silu \[1\]: crashed .*SIGSEGV' "$tmp/batch.txt"
check "the merged graph's other cases pass" grep -Eq '^PASS +gelu ' "$tmp/batch.txt"
cat "$tmp/abort.txt" "$tmp/throw.txt" "$tmp/hang.txt" "$tmp/batch.txt"

# train: the default model holds gelu; its first execute crashes.
KILN_TEST_CRASH_OP=gelu "$kiln" train --backend "$plugin" --train-iters 1 >"$tmp/train.out" 2>"$tmp/train.err"
status=$?
cat "$tmp/train.err"
check "train dies of SIGSEGV (status 139, got $status)" test "$status" -eq 139
check "train says which plugin and call in one line" \
  test "$(grep -c "^kiln: fatal SIGSEGV in plugin 'execfaults' ($plugin) during execute; " "$tmp/train.err")" -eq 1
check "and nothing after it" grep -q "^kiln: fatal SIGSEGV" <(tail -n 1 "$tmp/train.err")
KILN_TEST_CRASH_OP=gelu KILN_TEST_CRASH_HOW=throw "$kiln" train --backend "$plugin" --train-iters 1 \
  >"$tmp/train.out" 2>"$tmp/train.err"
status=$?
check "an escaping exception ends train with status 1 (got $status)" test "$status" -eq 1
check "naming the plugin and the call" \
  grep -q "^kiln: error: execfaults: execute let a C++ exception escape: .*(plugin $plugin)$" "$tmp/train.err"

# generate: a checkpoint trained on cpu, sampled with the crashing plugin.
"$kiln" train --train-iters 1 --save "$tmp/ck" >"$tmp/ck.out" 2>&1 || { cat "$tmp/ck.out"; exit 1; }
KILN_TEST_CRASH_OP=gelu "$kiln" generate --load "$tmp/ck" --backend "$plugin" --prompt "The " --max-new-tokens 2 \
  >"$tmp/gen.out" 2>"$tmp/gen.err"
status=$?
cat "$tmp/gen.err"
check "generate dies of SIGSEGV (status 139, got $status)" test "$status" -eq 139
check "generate says which plugin and call in one line" \
  test "$(grep -c "^kiln: fatal SIGSEGV in plugin 'execfaults' ($plugin) during execute; " "$tmp/gen.err")" -eq 1

exit $fail
