#!/usr/bin/env bash
# A deterministic compile error (the faults plugin rejecting every graph) is
# cached as a .failed marker; later runs report it without compiling until
# --retry-failed. A crash or a timeout leaves no marker. The exit status is
# the number of failures.
source "$(dirname "$0")/common.bash"
cache=$tmp/cache
set +e
KILN_TEST_COMPILE_REJECT=1 "$kiln" precompile "${model[@]}" --backend faults --cache-dir "$cache" >"$tmp/rej.log" 2>&1
status=$?
set -e
grep -E "^(Total|Already)|FAILED" "$tmp/rej.log" | head -8
total=$(summary "Total graphs" "$tmp/rej.log")
[ "$status" = "$total" ] || fail "exit status $status, expected $total (the number of failures)"
[ "$(count_files "$cache" '*.failed')" = "$total" ] || fail "expected $total failure markers"
grep -q "rejects this graph" "$(find "$cache" -name '*.failed' | head -1)" || fail "marker lacks the log"

# Without --retry-failed the markers stand (no compile happens).
set +e
"$kiln" precompile "${model[@]}" --backend faults --cache-dir "$cache" >"$tmp/again.log" 2>&1
status=$?
"$kiln" train "${model[@]}" --backend faults --cache-dir "$cache" >"$tmp/train.log" 2>&1
tstatus=$?
set -e
[ "$status" = "$total" ] || fail "markers were not honoured (status $status)"
grep -q "failed before" "$tmp/again.log" || fail "no 'failed before' line"
[ "$tstatus" = 1 ] && grep -q "^kiln: error: compiling graph .* failed before .*--retry-failed" "$tmp/train.log" ||
  { cat "$tmp/train.log"; fail "train must refuse a known failure with one line"; }

# --retry-failed compiles them (the plugin accepts them now) and clears the markers.
"$kiln" precompile "${model[@]}" --backend faults --cache-dir "$cache" --retry-failed >"$tmp/retry.log" 2>&1 ||
  { cat "$tmp/retry.log"; fail "retry"; }
[ "$(summary "Total successful compilations" "$tmp/retry.log")" = "$total" ] || fail "retry did not compile all"
[ "$(count_files "$cache" '*.failed')" = 0 ] || fail "markers left after a successful retry"

# A crashing compiler and a timeout: failures, but no markers.
set +e
KILN_TEST_COMPILE_CRASH=1 "$kiln" precompile "${model[@]}" --backend faults --cache-dir "$tmp/crash" >"$tmp/crash.log" 2>&1
crash=$?
KILN_TEST_COMPILE_SLEEP_MS=30000 "$kiln" precompile "${model[@]}" --backend faults --cache-dir "$tmp/slow" \
  --compile-timeout 1 --num-parallel 4 >"$tmp/slow.log" 2>&1
slow=$?
set -e
grep -m1 "worker crashed" "$tmp/crash.log" || fail "no crash reported"
grep -m1 "timed out" "$tmp/slow.log" || fail "no timeout reported"
[ "$crash" = "$total" ] && [ "$slow" = "$total" ] || fail "crash/timeout statuses $crash/$slow, expected $total"
[ "$(count_files "$tmp/crash" '*.failed')" = 0 ] && [ "$(count_files "$tmp/slow" '*.failed')" = 0 ] ||
  fail "a crash or timeout left a failure marker"
