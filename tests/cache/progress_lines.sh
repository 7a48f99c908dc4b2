#!/usr/bin/env bash
# Precompile's progress off a terminal: plain lines
#   precompile: D/T done, F failed, R running, L locked, S s[, ETA E s | ETA ?]
# at most one a second (plus the final one), ending with every unit done.
source "$(dirname "$0")/common.bash"
# The counts below are those of whole step graphs (5 per run); per-layer
# units are counted in test_compile_units.cpp and cache.require_precompiled.
export KILN_COMPILE_UNITS=whole
start=$(date +%s)
KILN_TEST_COMPILE_SLEEP_MS=500 "$kiln" precompile "${model[@]}" --backend faults --cache-dir "$tmp/cache" \
  --num-parallel 1 >"$tmp/pre.log" 2>&1 || { cat "$tmp/pre.log"; fail "precompile exited with $?"; }
seconds=$(($(date +%s) - start + 1))
grep "done, " "$tmp/pre.log" >"$tmp/progress.log" || fail "no progress lines"
cat "$tmp/progress.log"
line='^precompile: [0-9]+/5 done, [0-9]+ failed, [01] running, [0-9]+ locked, [0-9.]+ s(, ETA ([0-9.]+ s|\?))?$'
if grep -Evq "$line" "$tmp/progress.log"; then fail "a progress line has another form: $(grep -Ev "$line" "$tmp/progress.log")"; fi
[ "$(tail -1 "$tmp/progress.log" | sed 's/,.*//')" = "precompile: 5/5 done" ] || fail "the last line must say 5/5 done"
grep -q "ETA [0-9.]* s$" "$tmp/progress.log" || fail "no line with an ETA"
if grep -q $'\r' "$tmp/pre.log"; then fail "carriage returns off a terminal"; fi
lines=$(wc -l <"$tmp/progress.log")
[ "$lines" -ge 2 ] && [ "$lines" -le $((seconds + 1)) ] || fail "$lines progress lines in about $seconds s"
