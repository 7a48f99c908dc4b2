#!/usr/bin/env bash
# A read-only cache directory: hits load, misses compile without being
# stored, one line says the cache is read-only, and nothing in it is written
# (no entry, lock, temp file or marker, and no access time touched).
if [ "$(id -u)" = 0 ]; then
  # chmod cannot deny root writes: run as nobody where that user can reach
  # kiln and this script (CI runs as root), else skip.
  if command -v setpriv >/dev/null &&
     setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$1" -a -r "$0" 2>/dev/null; then
    exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp bash "$0" "$@"
  fi
  echo "running as root, and user nobody cannot reach $1: a read-only directory cannot be tested; skipping"
  exit 77
fi
source "$(dirname "$0")/common.bash"
cache=$tmp/cache
"$kiln" precompile "${model[@]}" --cache-dir "$cache" >/dev/null 2>&1 || fail "filling the cache"
chmod -R a-w "$cache"
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
snapshot() { find "$cache" -printf '%p %s %m %T@ %C@\n' | sort; }
snapshot >"$tmp/before"
sleep 1  # a touched time would differ from the snapshot's

# Hits.
"$kiln" train "${model[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/hit.log" 2>&1 ||
  { cat "$tmp/hit.log"; fail "train from a read-only cache"; }
grep -q "compile cache: [1-9][0-9]* graphs from the cache .*, 0 compiled" "$tmp/hit.log" || fail "hits were not loaded"
# Misses (another micro-batch size): train and precompile compile, store nothing.
"$kiln" train "${model[@]}" --micro-batch-size 1 --cache-dir "$cache" >"$tmp/miss.log" 2>&1 ||
  { cat "$tmp/miss.log"; fail "train with misses"; }
grep -q "compile cache: [0-9]* graphs from the cache .*, [1-9][0-9]* compiled" "$tmp/miss.log" || fail "misses did not compile"
grep -q "setup spent [0-9.]* s compiling (the backend compiling the [1-9][0-9]* compile units* not in the compile cache)" \
  "$tmp/miss.log" || fail "the setup line does not count the misses' compiling"
"$kiln" precompile "${model[@]}" --micro-batch-size 1 --cache-dir "$cache" --json >"$tmp/pre.json" 2>"$tmp/pre.log" ||
  { cat "$tmp/pre.log"; fail "precompile on a read-only cache"; }
cat "$tmp/pre.json"
grep -q '"stored":false' "$tmp/pre.json" && grep -q '"failed":0' "$tmp/pre.json" || fail "precompile summary"
[ "$(grep -c "is not writable .*reading it only" "$tmp/pre.log")" = 1 ] || { cat "$tmp/pre.log"; fail "one read-only line"; }
grep -q "read-only: [1-9][0-9]* compiled units\? checked, not stored" "$tmp/pre.log" || fail "no 'not stored' line"

snapshot >"$tmp/after"
diff "$tmp/before" "$tmp/after" || fail "the read-only cache was written to"
