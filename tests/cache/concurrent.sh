#!/usr/bin/env bash
# Two precompiles of the same run sharing one cache directory, at the same
# time (compiles slowed so they overlap): both succeed, and every key has
# exactly one entry, with no temp files, locks or failure markers left.
source "$(dirname "$0")/common.bash"
cache=$tmp/cache
export KILN_TEST_COMPILE_SLEEP_MS=300
"$kiln" precompile "${model[@]}" --backend faults --cache-dir "$cache" --num-parallel 2 >"$tmp/a.log" 2>&1 &
a=$!
"$kiln" precompile "${model[@]}" --backend faults --cache-dir "$cache" --num-parallel 2 >"$tmp/b.log" 2>&1 &
b=$!
wait $a || { cat "$tmp/a.log"; fail "first precompile failed"; }
wait $b || { cat "$tmp/b.log"; fail "second precompile failed"; }
cat "$tmp/a.log" "$tmp/b.log" | grep -E "^(Total|Already)"
total=$(summary "Total graphs" "$tmp/a.log")
for log in "$tmp/a.log" "$tmp/b.log"; do
  [ "$(summary "Total failed compilations" "$log")" = 0 ] || fail "failures in $log"
  done_=$(( $(summary "Already cached" "$log") + $(summary "Total successful compilations" "$log") ))
  [ "$done_" = "$total" ] || fail "$log: cached + compiled != total"
done
[ "$(count_files "$cache" '*.entry')" = "$total" ] || fail "expected exactly $total entries"
[ "$(count_files "$cache" '*.tmp.*')" = 0 ] || fail "temp files left"
[ "$(count_files "$cache" '*.lock')" = 0 ] || fail "locks left"
[ "$(count_files "$cache" '*.failed')" = 0 ] || fail "failure markers left"
"$kiln" cache verify --cache-dir "$cache"
