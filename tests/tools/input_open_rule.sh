#!/usr/bin/env bash
# Issue 36, build item 1: every file kiln reads is opened through
# core/regular_file.h (regular files only, a size bound per kind, one error
# line naming the file and the fix). This grep fails when a raw open of an
# input appears anywhere else in the non-test sources of the tree given as $1.
# Allowed without a mark: core/regular_file.cpp (the helper) and opens that
# write (O_WRONLY, O_RDWR, fopen "w"/"a", std::ofstream). Any other raw open
# must say on its line why it is no input: "// not an input: <reason>"
# (a directory opened to fsync it, /proc files, kiln's own temporaries).
set -u
root=$1
cd "$root" || exit 1
dirs=()
for d in core graph compiler_cache backends trainer cli; do [ -d "$d" ] && dirs+=("$d"); done
raw='std::ifstream|std::fstream|std::fopen\(|[^a-z_]fopen\(|(^|[^A-Za-z0-9_])::open(at)?\(|[^a-z_]mmap\(|fdopen\(|freopen\('
hits=$(grep -rnE --include='*.cpp' --include='*.h' --include='*.hpp' --include='*.c' "$raw" "${dirs[@]}" |
  grep -v '^core/regular_file\.cpp:' |
  grep -vE 'O_WRONLY|O_RDWR|"wb?\+?"|"ab?\+?"|std::ofstream' |
  grep -v '// not an input: ' |
  grep -vE '^[^:]+:[0-9]+: *//')
[ "$(grep -c . <<<"$(grep -rlE --include='*.cpp' 'open_input|read_input' "${dirs[@]}")")" -ge 5 ] ||
  { echo "FAIL: expected the input helper to be used in at least 5 files" >&2; exit 1; }
if [ -n "$hits" ]; then
  echo "FAIL: raw input opens outside core/regular_file.cpp; use open_input/read_input/open_input_stream" >&2
  echo "(or mark a line that opens no input with '// not an input: <reason>'):" >&2
  echo "$hits" >&2
  exit 1
fi
echo "input open rule holds: every input is opened through core/regular_file.h"
