#!/usr/bin/env bash
# A plugin built from the frozen ABI 1.0 header (the template, built by
# tests/CMakeLists.txt with tests/abi/v1_0 first on its include path) loads
# in today's kiln as ABI 1.0 and passes check-backend: its table ends where
# 1.0's did, and every later field reads as absent.
# Usage: plugin_1_0.sh <kiln> <libkiln-backend-template.so built on 1.0>
set -euo pipefail
kiln=$1
plugin=$2
out=$(mktemp)
trap 'rm -f "$out" "$out.devices"' EXIT
status=0
"$kiln" check-backend "$plugin" >"$out" 2>&1 || status=$?
cat "$out"
fail=0
[ "$status" = 0 ] || { echo "FAIL: check-backend exited $status"; fail=1; }
KILN_PLUGIN_PATH=$(dirname "$plugin") "$kiln" devices >"$out.devices" 2>&1 || true
grep "backend template" "$out.devices" || true
grep -q "^backend template  (ABI 1\.0," "$out.devices" || { echo "FAIL: the plugin did not load as ABI 1.0"; fail=1; }
for op in fill add mul scale gelu gelu_grad; do
  grep -Eq "^PASS +$op " "$out" || { echo "FAIL: $op did not pass"; fail=1; }
done
# Built on 1.0 the template exports no op_supported_node: its compile
# refuses the large matmuls (KILN_ERR_UNSUPPORTED), and those cases still
# count as on the fallback.
grep -Eq '^PASS +matmul +[1-9][0-9]*/[0-9]+ cases \([1-9][0-9]* on the fallback\)' "$out" ||
  { echo "FAIL: the matmuls the 1.0 template refuses at compile are not counted as on the fallback"; fail=1; }
exit $fail
