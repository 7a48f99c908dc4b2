#!/usr/bin/env bash
# `kiln devices`: lists the cpu backend from the default search path, and
# explains each bad plugin in one line without failing or crashing.
# Usage: devices.sh <path-to-kiln> <bad-plugin-dir>
set -u
kiln=$1
bad_dir=$2
fail=0
check() {  # check <description> <command...>
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what" >&2
    fail=1
  fi
}

out=$(env -u KILN_PLUGIN_PATH "$kiln" devices 2>&1)
status=$?
echo "$out"
check "kiln devices exits 0 (got $status)" test "$status" -eq 0
check "cpu backend is loaded from libkiln-backend-cpu.so" \
  grep -Eq '^backend cpu .*/libkiln-backend-cpu\.so$' <<<"$out"
check "cpu backend lists device 0" grep -Eq '^  device 0: .*kind cpu' <<<"$out"
# ABI 1.3: what the hardware offers for 16-bit floats; the cpu kernels
# always store bf16/f16, so that much is listed on any x86-64.
check "cpu device lists its low-precision features" grep -Eq '^    low precision: 16-bit storage' <<<"$out"
# The ABI this kiln speaks, as it prints it for its own cpu plugin.
abi=$(sed -nE 's/^backend cpu +\(ABI ([0-9]+\.[0-9]+),.*/\1/p' <<<"$out")
check "cpu backend prints its ABI version" test -n "$abi"
check "help works" "$kiln" devices --help >/dev/null

out=$(KILN_PLUGIN_PATH=$bad_dir "$kiln" devices 2>&1)
status=$?
echo "$out"
check "kiln devices with bad plugins exits 0 (got $status)" test "$status" -eq 0
check "cpu is still found next to the executable" grep -Eq '^backend cpu ' <<<"$out"
check "search path lists the bad plugin dir" grep -Fq "  $bad_dir" <<<"$out"
expect_reason() {  # expect_reason <plugin name> <words in its reason>
  local line
  line=$(grep -F "/libkiln-backend-$1.so: " <<<"$out")
  check "$1 is listed as skipped exactly once" test "$(grep -c . <<<"$line")" -eq 1
  check "$1 reason mentions '$2' (got: $line)" grep -Fq "$2" <<<"$line"
}
expect_reason wrong_abi "built for kiln plugin ABI 2.0, this kiln speaks $abi"
expect_reason not_a_plugin "no kiln_plugin_get_api symbol"
expect_reason short_table "smaller than"
expect_reason incomplete "lacks required functions"
expect_reason declined "cannot run it"
expect_reason missing_symbol "undefined symbol"
expect_reason null_table "returned NULL"
# An older minor version's shorter table loads; its backend has no devices.
check "old_table loads as a backend" grep -Eq '^backend old_table +\(ABI 1\.0, compiler old_table-1\)' <<<"$out"
old_devices=$(grep -A1 -E '^backend old_table ' <<<"$out" | tail -n 1)
check "old_table lists no devices (got: $old_devices)" test "$old_devices" = "  no devices"

exit $fail
