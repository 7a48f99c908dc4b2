#!/usr/bin/env bash
# A truncated entry and a bit-flipped entry are quarantined and recompiled,
# never a crash; afterwards the cache is whole again.
source "$(dirname "$0")/common.bash"
cache=$tmp/cache
"$kiln" precompile "${model[@]}" --cache-dir "$cache" --num-parallel 2 >"$tmp/pre.log" 2>&1
mapfile -t entries < <(find "$cache" -name '*.entry' | sort)
[ "${#entries[@]}" -ge 2 ] || fail "expected entries"
truncate -s -100 "${entries[0]}"
size=$(stat -c %s "${entries[1]}")
printf '\x5a' | dd of="${entries[1]}" bs=1 seek=$((size / 2)) conv=notrunc status=none
"$kiln" cache verify --cache-dir "$cache" && fail "verify must report the corrupt entries"
"$kiln" train "${model[@]}" --cache-dir "$cache" >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; fail "train crashed"; }
grep "is corrupt" "$tmp/train.log"
[ "$(grep -c "is corrupt" "$tmp/train.log")" = 2 ] || fail "expected 2 corrupt-entry warnings"
grep -q "compile cache: .*, 2 compiled" "$tmp/train.log" || fail "expected exactly the 2 corrupt graphs to recompile"
[ "$(find "$cache/quarantine" -name '*.entry.*' ! -name '*.why' | wc -l)" = 2 ] || fail "expected 2 quarantined files"
"$kiln" cache verify --cache-dir "$cache"
"$kiln" train "${model[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/again.log" 2>&1 ||
  { cat "$tmp/again.log"; fail "recompiled entries were not stored"; }

# Issue 13 item 20: under --require-precompiled a graph whose own entry was
# just quarantined is reported as such, not as a miss whose "nearest entry"
# belongs to another model.
mapfile -t entries < <(find "$cache/v1" -name '*.entry' | sort)
truncate -s -100 "${entries[0]}"
if "$kiln" train "${model[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/req.log" 2>&1; then
  fail "--require-precompiled ran with a corrupt entry"
fi
grep -q "^kiln: error: --require-precompiled: graph [0-9a-f]*'s cache entry was corrupt and is now $cache/quarantine/" \
  "$tmp/req.log" || { cat "$tmp/req.log"; fail "the error does not name the quarantined entry"; }
grep -q "nearest" "$tmp/req.log" && fail "the error compares with another entry"
echo "ok: $(grep '^kiln: error' "$tmp/req.log")"
