#!/usr/bin/env bash
# An unusable cache directory is a warning and an uncached run, not an error;
# precompile, which exists to fill the cache, refuses with one line.
source "$(dirname "$0")/common.bash"
echo x >"$tmp/a-file"
# A directory below a regular file can never be created, even by root.
bad=$tmp/a-file/cache
"$kiln" train "${model[@]}" --cache-dir "$bad" >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; fail "train failed"; }
grep "compile cache" "$tmp/train.log"
grep -q "warning.*compile cache $bad is not usable" "$tmp/train.log" || fail "no warning"
grep -q "compile cache: 0 graphs from the cache .*, no cache" "$tmp/train.log" || fail "not an uncached run"
if "$kiln" precompile "${model[@]}" --cache-dir "$bad" >"$tmp/pre.log" 2>&1; then fail "precompile must refuse"; fi
grep -q "^kiln: error: compile cache $bad is not writable" "$tmp/pre.log" || { cat "$tmp/pre.log"; fail "no one-line error"; }

# A read-only but populated cache: hits are used, nothing is written.
if [ "$(id -u)" = 0 ]; then
  echo "running as root: chmod cannot make a directory read-only, skipping the read-only part"
  exit 0
fi
"$kiln" precompile "${model[@]}" --cache-dir "$tmp/ro" >/dev/null 2>&1
chmod -R a-w "$tmp/ro"
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
"$kiln" train "${model[@]}" --cache-dir "$tmp/ro" --require-precompiled >"$tmp/ro.log" 2>&1 || { cat "$tmp/ro.log"; fail "read-only"; }
grep -q "is not writable .*reading it only" "$tmp/ro.log" || fail "no read-only warning"
grep -q ", 0 compiled" "$tmp/ro.log" || fail "read-only cache was not used"
