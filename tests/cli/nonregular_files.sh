#!/usr/bin/env bash
# Special files where kiln expects regular ones (issue 13, item 4). Before:
# a FIFO as a compile-cache entry blocked `kiln train` forever in open(), an
# entry symlinked to /dev/zero was read without bound, and a FIFO named
# libkiln-backend-x.so on the plugin path hung every command in dlopen().
# Now each costs one warning or skipped-plugin line. Every command runs
# under `timeout`, so a regression fails here instead of hanging.
# Usage: nonregular_files.sh <path-to-kiln> <bad-plugin-dir>
set -uo pipefail
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0
       --log-interval 1000 --train-iters 1)

# A cache with this job's entries, two of them replaced by special files.
export KILN_CACHE_DIR=$tmp/cache
timeout 300 "$kiln" train "${small[@]}" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "the first run failed"; }
mapfile -t entries < <(find "$KILN_CACHE_DIR/v1" -name '*.entry' | sort)
[ ${#entries[@]} -ge 2 ] || fail "expected at least 2 cache entries, found ${#entries[@]}"
fifo=${entries[0]}
zero=${entries[1]}
rm "$fifo" "$zero"
mkfifo "$fifo"
ln -s /dev/zero "$zero"

timeout 300 "$kiln" train "${small[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 124 ] || fail "kiln train hung on a FIFO or /dev/zero cache entry"
[ $rc -eq 0 ] || { cat "$tmp/err"; fail "kiln train exited $rc"; }
grep -Fq "compile cache: cannot read $fifo: is a FIFO, not a regular file; treating it as a miss" "$tmp/err" ||
  { cat "$tmp/err"; fail "no warning names the FIFO entry"; }
grep -Fq "compile cache: cannot read $zero: is a character device, not a regular file; treating it as a miss" \
  "$tmp/err" || { cat "$tmp/err"; fail "no warning names the /dev/zero entry"; }
# The recompiled entries replaced the special files.
[ -f "$fifo" ] && [ ! -L "$zero" ] && [ -f "$zero" ] || fail "the special files were not replaced by entries"
echo "ok: FIFO and /dev/zero cache entries are misses with one warning each"

# A FIFO named like a plugin: every command still runs; devices names it.
export KILN_CACHE_DIR=off
mkdir "$tmp/plugins"
mkfifo "$tmp/plugins/libkiln-backend-x.so"
KILN_PLUGIN_PATH=$tmp/plugins timeout 300 "$kiln" devices >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 124 ] || fail "kiln devices hung on a FIFO plugin"
[ $rc -eq 0 ] || { cat "$tmp/err"; fail "kiln devices exited $rc"; }
grep -Fxq "  $tmp/plugins/libkiln-backend-x.so: is a FIFO, not a regular file; remove it from $tmp/plugins" "$tmp/out" ||
  { cat "$tmp/out"; fail "kiln devices does not report the FIFO plugin"; }
KILN_PLUGIN_PATH=$tmp/plugins timeout 300 "$kiln" train "${small[@]}" --backend x >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 124 ] || fail "kiln train --backend x hung on a FIFO plugin"
[ $rc -ne 0 ] || fail "kiln train --backend x succeeded with a FIFO for its plugin"
grep -Fq "backend 'x' found at $tmp/plugins/libkiln-backend-x.so but not loaded: is a FIFO, not a regular file" "$tmp/err" ||
  { cat "$tmp/err"; fail "kiln train --backend x does not name the FIFO"; }
KILN_PLUGIN_PATH=$tmp/plugins timeout 300 "$kiln" train "${small[@]}" >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "kiln train --backend cpu failed with a FIFO plugin on the path"; }
echo "ok: a FIFO plugin is reported, never opened"
