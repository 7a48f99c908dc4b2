#!/usr/bin/env bash
# The loader and plugin file names (issue 19 point 7): a file whose name says
# one backend and whose table says another loads under the table's name with
# a warning naming both, --backend <file's name> says which name to use, and
# a backend found nowhere gets a hint that names no directory already
# searched.
source "$(dirname "$0")/common.bash"
mkdir -p "$tmp/named"
cp "$test_plugins/libkiln-backend-faults.so" "$tmp/named/libkiln-backend-mydev.so"
export KILN_PLUGIN_PATH="$bin_dir:$tmp/named"

set +e
"$kiln" train "${model[@]}" --backend mydev --cache-dir off >"$tmp/mydev.log" 2>&1
status=$?
"$kiln" train "${model[@]}" --backend nope --cache-dir off >"$tmp/nope.log" 2>&1
nope=$?
set -e
cat "$tmp/mydev.log" "$tmp/nope.log"
[ "$status" = 1 ] || fail "--backend mydev must fail (status $status)"
grep -q "warn.*plugin $tmp/named/libkiln-backend-mydev.so: its file name says backend 'mydev' but its table says 'faults'" \
  "$tmp/mydev.log" || fail "no warning naming both names"
grep -q "^kiln: error: no backend 'mydev': $tmp/named/libkiln-backend-mydev.so loads as backend 'faults' .*use --backend faults" \
  "$tmp/mydev.log" || fail "the error does not say which name the file loads as"
[ "$nope" = 1 ] || fail "--backend nope must fail (status $nope)"
grep -q "^kiln: error: no backend 'nope'" "$tmp/nope.log" || fail "no error for an unknown backend"
hint=$(grep "^kiln: error: no backend 'nope'" "$tmp/nope.log" | sed 's/.*Search path: [^ ]* //')
for dir in "$bin_dir" "$tmp/named"; do
  case $hint in *"$dir"*) fail "the hint '$hint' names $dir, which is already searched" ;; esac
done
echo "PASS: misnamed plugin warned and explained; the hint names no searched directory"
