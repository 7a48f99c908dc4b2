#!/usr/bin/env bash
# A plugin file on KILN_PLUGIN_PATH that is a symbolic link loop is named as
# one (ELOOP), with the fix, not reported as "no such file" (issue 36, P3):
# in `kiln devices`' skipped files, and as the one-line error of a run that
# asks for that backend.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
mkdir "$tmp/plug"
ln -s b.so "$tmp/plug/libkiln-backend-a.so"; ln -s libkiln-backend-a.so "$tmp/plug/b.so"
want="a symbolic link loop (Too many levels of symbolic links); fix or remove the link in $tmp/plug"
KILN_PLUGIN_PATH=$tmp/plug "$kiln" devices >"$tmp/out" 2>"$tmp/err"
if ! grep -qF "$tmp/plug/libkiln-backend-a.so: $want" "$tmp/out"; then
  echo "FAIL: kiln devices does not name the loop:"; cat "$tmp/out" "$tmp/err"; fails=$((fails+1))
else
  echo "ok: $(grep -F 'libkiln-backend-a.so:' "$tmp/out")"
fi
KILN_PLUGIN_PATH=$tmp/plug "$kiln" train --backend a --train-iters 1 --log-interval 1 --eval-interval 100 \
  --eval-iters 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
if [ $rc -eq 0 ] || [ "$(wc -l <"$tmp/err.lines")" -ne 1 ] || ! grep -qF "$want" "$tmp/err.lines"; then
  echo "FAIL: train --backend a -> rc=$rc:"; cat "$tmp/err"; fails=$((fails+1))
else
  echo "ok: $(cat "$tmp/err.lines")"
fi
exit $fails
