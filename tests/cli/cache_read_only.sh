#!/usr/bin/env bash
# `kiln cache clear` and `kiln cache gc` on a cache they cannot change (a
# read-only mount: EROFS; a directory without write permission: EACCES)
# fail in one line naming the cache, a file and the reason, instead of
# "removed 0 files" or "entries in use" with status 0 (issue 36, K9d). The
# entries are all still there afterwards.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cache=$tmp/cache
KILN_CACHE_DIR=$cache "$kiln" train --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 \
  --micro-batch-size 2 --train-iters 1 --log-interval 1 --eval-interval 100 --eval-iters 0 >"$tmp/train.out" 2>&1 ||
  { cat "$tmp/train.out"; echo "FAIL: the run that fills the cache failed"; exit 1; }
entries() { find "$cache" -name '*.entry' | wc -l; }
before=$(entries)
[ "$before" -gt 0 ] || { echo "FAIL: the run left no cache entries"; exit 1; }
# Root writes through permissions: a read-only bind mount in a private
# mount namespace then; anyone else: a directory without write permission.
if [ "$(id -u)" = 0 ]; then
  unshare -m true 2>/dev/null || { echo "no mount namespace here to make a read-only cache"; exit 77; }
  read_only() {
    unshare -m sh -c 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"' "$cache" "$@"
  }
  reason="Read-only file system"
else
  find "$cache" -type d -exec chmod a-w {} +
  read_only() { "$@"; }
  reason="Permission denied"
fi
fails=0
expect_error() {
  read_only "$kiln" "$@" --cache-dir "$cache" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -qF "from $cache (" "$tmp/err" || ! grep -qF "$reason" "$tmp/err"; then
    echo "FAIL: kiln $* on a read-only cache -> rc=$rc, stdout and stderr:"; cat "$tmp/out" "$tmp/err"; fails=$((fails+1))
  else
    echo "ok: $(cat "$tmp/err")"
  fi
}
expect_error cache clear
expect_error cache gc --max-size 1
[ "$(entries)" = "$before" ] || { echo "FAIL: entries changed: $before -> $(entries)"; fails=$((fails+1)); }
exit $fails
