#!/usr/bin/env bash
# kiln cache ls / explain / verify / gc / clear on a real precompiled cache.
source "$(dirname "$0")/common.bash"
cache=$tmp/cache
"$kiln" precompile "${model[@]}" --cache-dir "$cache" >"$tmp/pre.log" 2>&1
total=$(summary "Total graphs" "$tmp/pre.log")
"$kiln" cache ls --cache-dir "$cache" | tee "$tmp/ls.log"
grep -q "^$total entries, .*; 0 failed; 0 locked" "$tmp/ls.log" || fail "ls does not list $total entries"
key=$(find "$cache" -name '*.entry' | head -1 | xargs basename | cut -c1-12)
"$kiln" cache explain "$key" --cache-dir "$cache" | tee "$tmp/explain.log"
grep -q "state: ok" "$tmp/explain.log" && grep -q "backend: cpu" "$tmp/explain.log" &&
  grep -q "compiler_version: cpu-" "$tmp/explain.log" || fail "explain lacks the key parts"
if "$kiln" cache explain 0000nosuchkey --cache-dir "$cache" 2>"$tmp/err.log"; then fail "unknown key must fail"; fi
grep -q "^kiln: error: no cache file has a key starting with '0000nosuchkey'" "$tmp/err.log" || fail "bad error"
"$kiln" cache verify --cache-dir "$cache"
# gc by age keeps fresh entries; by size 0 removes them all.
"$kiln" cache gc --max-age 1d --cache-dir "$cache"
[ "$(count_files "$cache" '*.entry')" = "$total" ] || fail "gc --max-age removed fresh entries"
touch -d '3 days ago' "$(find "$cache" -name '*.entry' | head -1)"
"$kiln" cache gc --max-age 2d --cache-dir "$cache"
[ "$(count_files "$cache" '*.entry')" = $((total - 1)) ] || fail "gc --max-age kept an old entry"
if "$kiln" cache gc --max-size lots --cache-dir "$cache" 2>"$tmp/err.log"; then fail "bad size accepted"; fi
grep -q "^kiln: error: --max-size 'lots' is not a size" "$tmp/err.log" || fail "bad --max-size error"
"$kiln" cache gc --max-size 0 --cache-dir "$cache"
[ "$(count_files "$cache" '*.entry')" = 0 ] || fail "gc --max-size 0 left entries"
# A failed marker as the cache names it (a 64-digit key); clear keeps files
# it did not write (cli/cache_clear_foreign_files.sh).
echo "x" >"$cache/v1/$(printf '%064d' 0).failed"
"$kiln" cache clear --failed --cache-dir "$cache"
[ "$(count_files "$cache" '*.failed')" = 0 ] || fail "clear --failed"
"$kiln" cache clear --cache-dir "$cache"
[ "$(find "$cache/v1" -type f | wc -l)" = 0 ] || fail "clear left files"
