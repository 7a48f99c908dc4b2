#!/usr/bin/env bash
# `kiln precompile --json`: stdout holds exactly one JSON object (the
# summary), every human line goes to stderr, and the exit status is
# min(failures, 255) in both the status and the object.
source "$(dirname "$0")/common.bash"
# The counts below are those of whole step graphs (5 per run); per-layer
# units are counted in test_compile_units.cpp and cache.require_precompiled.
export KILN_COMPILE_UNITS=whole
"$kiln" precompile "${model[@]}" --cache-dir "$tmp/cache" --json >"$tmp/out.json" 2>"$tmp/err.log" ||
  { cat "$tmp/err.log"; fail "precompile --json exited with $?"; }
cat "$tmp/out.json"
[ "$(wc -l <"$tmp/out.json")" = 1 ] || fail "stdout must be one line of JSON"
grep -q '^{.*}$' "$tmp/out.json" || fail "stdout is not a JSON object"
for field in '"units":5' '"unique_units":5' '"compiled":5' '"cached":0' '"failed":0' '"fell_back":0' \
  '"exit_status":0' '"stored":true' '"seconds":[0-9.e-]*' '"compile_seconds":[0-9.e-]*'; do
  grep -q "$field" "$tmp/out.json" || fail "no $field in the JSON summary"
done
grep -q "^Total successful compilations: 5$" "$tmp/err.log" || fail "the human summary must go to stderr"

# Again: everything cached.
"$kiln" precompile "${model[@]}" --cache-dir "$tmp/cache" --json >"$tmp/again.json" 2>/dev/null
grep -q '"cached":5' "$tmp/again.json" && grep -q '"compiled":0' "$tmp/again.json" || fail "second run: $(cat "$tmp/again.json")"

# Failures: the status and the object agree.
set +e
KILN_TEST_COMPILE_REJECT=1 "$kiln" precompile "${model[@]}" --backend faults --cache-dir "$tmp/rej" --json \
  >"$tmp/rej.json" 2>"$tmp/rej.log"
status=$?
set -e
[ "$status" = 5 ] || { cat "$tmp/rej.log"; fail "exit status $status, expected 5 failures"; }
grep -q '"failed":5' "$tmp/rej.json" && grep -q '"exit_status":5' "$tmp/rej.json" || fail "failures: $(cat "$tmp/rej.json")"
