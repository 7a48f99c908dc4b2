#!/usr/bin/env bash
# K7b (findings 2026-11-27): `kiln cache ls|stats|verify|clear|gc` on a
# regular file reported an empty cache with exit 0, hiding a mistyped
# --cache-dir. Now one line names it and the exit is 1; the file is kept.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
echo keep >"$tmp/f"
for sub in ls stats verify clear gc; do
  "$kiln" cache $sub --cache-dir "$tmp/f" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ $rc -eq 0 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q -- "--cache-dir $tmp/f is not a directory" "$tmp/err"; then
    echo "FAIL: cache $sub on a file -> rc=$rc"; cat "$tmp/out" "$tmp/err"; fails=$((fails+1))
  fi
done
[ "$(cat "$tmp/f")" = keep ] || { echo "FAIL: the file changed"; fails=$((fails+1)); }
# A cache directory that does not exist yet is still an empty cache.
"$kiln" cache ls --cache-dir "$tmp/new" >"$tmp/out" 2>&1 || { cat "$tmp/out"; echo "FAIL: ls of a new dir"; fails=$((fails+1)); }
[ $fails -eq 0 ] && echo ok
[ $fails -eq 0 ]
