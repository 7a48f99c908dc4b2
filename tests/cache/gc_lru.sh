#!/usr/bin/env bash
# `kiln cache gc --max-size` evicts by last use (a hit touches an entry), and
# never an entry in use: one another process is reading (a shared flock, as
# every cache read holds) or compiling (a live key lock).
source "$(dirname "$0")/common.bash"
cache=$tmp/cache
bytes() { find "$1" -name '*.entry' -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
# Model A's entries alone, for their size.
"$kiln" precompile "${model[@]}" --cache-dir "$tmp/a-only" >/dev/null 2>&1 || fail "precompile A alone"
a_bytes=$(bytes "$tmp/a-only")
# A, then B (another micro-batch size), then a train of A: B's own entries are
# now the least recently used.
"$kiln" precompile "${model[@]}" --cache-dir "$cache" >/dev/null 2>&1 || fail "precompile A"
"$kiln" precompile "${model[@]}" --micro-batch-size 1 --cache-dir "$cache" >/dev/null 2>&1 || fail "precompile B"
"$kiln" train "${model[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/a.log" 2>&1 || fail "train A"
[ "$(bytes "$cache")" -gt "$a_bytes" ] || fail "B added nothing"
# Room for A's entries (and the few bytes their metadata may differ by), not for one more.
"$kiln" cache gc --max-size $((a_bytes + 1000)) --cache-dir "$cache" >"$tmp/gc.log"
cat "$tmp/gc.log"
"$kiln" train "${model[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/a2.log" 2>&1 ||
  { tail -1 "$tmp/a2.log"; fail "gc evicted a recently used entry"; }
if "$kiln" train "${model[@]}" --micro-batch-size 1 --cache-dir "$cache" --require-precompiled >"$tmp/b.log" 2>&1; then
  fail "gc kept the least recently used entries"
fi

# In use: one entry being read (this shell holds a shared flock on it, as
# every cache read does), one being compiled (a live lock file of this
# shell). gc --max-size 0 keeps both.
entries=($(find "$cache" -name '*.entry' -type f | sort))
[ "${#entries[@]}" -ge 3 ] || fail "expected at least 3 entries"
read_entry=${entries[0]}
compiling=${entries[1]}
exec {reader}<"$read_entry"
flock -s "$reader"
echo "$(hostname) $$ test-token" >"${compiling%.entry}.lock"
"$kiln" cache gc --max-size 0 --cache-dir "$cache" >"$tmp/gc0.log"
cat "$tmp/gc0.log"
[ -f "$read_entry" ] || fail "gc removed an entry being read"
[ -f "$compiling" ] || fail "gc removed an entry whose key is being compiled"
[ "$(count_files "$cache" '*.entry')" = 2 ] || fail "gc --max-size 0 must remove every entry not in use"
grep -q "^kept 2 entries in use" "$tmp/gc0.log" || fail "gc must say what it kept"
exec {reader}<&-
rm -f "${compiling%.entry}.lock"
"$kiln" cache gc --max-size 0 --cache-dir "$cache" >/dev/null
[ "$(count_files "$cache" '*.entry')" = 0 ] || fail "entries no longer in use must go"
