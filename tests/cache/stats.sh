#!/usr/bin/env bash
# `kiln cache stats`: hits, misses and compile time saved, summed over every
# process that used the cache, concurrent ones included (each appends one
# line to usage.log in one write).
source "$(dirname "$0")/common.bash"
# The counts below are those of whole step graphs (5 per run); per-layer
# units are counted in test_compile_units.cpp and cache.require_precompiled.
export KILN_COMPILE_UNITS=whole
cache=$tmp/cache
"$kiln" cache stats --cache-dir "$cache" >"$tmp/empty.log"
grep -q "^no use recorded yet" "$tmp/empty.log" || { cat "$tmp/empty.log"; fail "an unused cache must say so"; }
"$kiln" precompile "${model[@]}" --cache-dir "$cache" >/dev/null 2>&1 || fail "precompile"
# Four runs at once, each loading the 5 units.
pids=()
for i in 1 2 3 4; do
  "$kiln" train "${model[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/train$i.log" 2>&1 &
  pids+=($!)
done
for i in 1 2 3 4; do wait "${pids[$((i - 1))]}" || { cat "$tmp/train$i.log"; fail "train $i"; }; done
grep -h "compile cache:" "$tmp/train1.log"
"$kiln" cache stats --cache-dir "$cache" >"$tmp/stats.log"
cat "$tmp/stats.log"
[ "$(summary hits "$tmp/stats.log")" = 20 ] || fail "expected 20 hits (4 runs x 5 units)"
[ "$(summary misses "$tmp/stats.log")" = 5 ] || fail "expected 5 misses (precompile's compilations)"
[ "$(summary "hit rate" "$tmp/stats.log")" = "80.0%" ] || fail "hit rate"
grep -q "^from 9 process records, .* in $cache/usage.log$" "$tmp/stats.log" || fail "expected 9 records, none skipped"
saved=$(summary "compile seconds saved" "$tmp/stats.log")
awk -v s="$saved" 'BEGIN { exit !(s > 0) }' || fail "no compile time saved recorded"
