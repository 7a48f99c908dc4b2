#!/usr/bin/env bash
# `kiln cache clear` deletes only what the cache wrote (issue 13, item 8). It
# used to delete every regular file under DIR/v1 and the whole
# DIR/quarantine tree, reporting "removed 0 files" for the latter, so a
# mistaken --cache-dir lost the user's files.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cache=$tmp/cache
"$kiln" train --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 \
  --eval-iters 0 --train-iters 1 --cache-dir "$cache" >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; fail "train"; }
entries=$(find "$cache/v1" -name '*.entry' | wc -l)
[ "$entries" -gt 0 ] || fail "the run cached nothing"
# A quarantined entry as the cache names it, and the user's own files.
key=$(basename "$(find "$cache/v1" -name '*.entry' | head -1)" .entry)
mkdir -p "$cache/quarantine" "$cache/v1/mine"
echo bad > "$cache/quarantine/$key.entry.1700000000000000.4242"
echo why > "$cache/quarantine/$key.entry.1700000000000000.4242.why"
echo keep > "$cache/v1/notes.txt"
echo keep > "$cache/v1/mine/results.entry"
echo keep > "$cache/quarantine/photo.jpg"
"$kiln" cache clear --cache-dir "$cache" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "cache clear failed"; }
cat "$tmp/out"
grep -q "removed $((entries + 2)) files from $cache" "$tmp/out" || fail "wrong count"
grep -q "kept 3 files that kiln did not write" "$tmp/out" || fail "the kept files are not reported"
[ "$(find "$cache/v1" -name '*.entry' ! -path '*/mine/*' | wc -l)" -eq 0 ] || fail "entries remain"
[ ! -e "$cache/quarantine/$key.entry.1700000000000000.4242" ] || fail "the quarantined entry remains"
for f in v1/notes.txt v1/mine/results.entry quarantine/photo.jpg; do
  [ "$(cat "$cache/$f")" = keep ] || fail "the user's $f was deleted"
done
echo "ok: the cache's files removed, the user's kept"
