#!/usr/bin/env bash
# Runs clang-tidy 14 with .clang-tidy over C++ sources, two at a time.
#
#   scripts/run-clang-tidy.sh [-p BUILD_DIR] [FILE...]       these files (default: every .cpp)
#   scripts/run-clang-tidy.sh [-p BUILD_DIR] --changed REF    the .cpp files changed since REF
#
# BUILD_DIR (default build) must have been configured: it holds
# compile_commands.json. Headers are checked through the files that include
# them. Exit status 1 if clang-tidy reported anything.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ "${1:-}" = "-p" ]; then
  build=$2
  shift 2
fi
CLANG_TIDY=${CLANG_TIDY:-clang-tidy-14}
command -v "$CLANG_TIDY" > /dev/null || { echo "run-clang-tidy: $CLANG_TIDY not found" >&2; exit 2; }
[ -f "$build/compile_commands.json" ] || { echo "run-clang-tidy: configure $build first (cmake --preset release)" >&2; exit 2; }

files=()
if [ "${1:-}" = "--changed" ]; then
  ref=${2:?--changed needs a git revision}
  while IFS= read -r f; do
    [ -f "$f" ] && grep -q "\"file\": \"[^\"]*/$f\"" "$build/compile_commands.json" && files+=("$f")
  done < <(git diff --name-only --diff-filter=d "$ref" -- '*.cpp' '*.cc')
elif [ $# -gt 0 ]; then
  files=("$@")
else
  while IFS= read -r f; do
    grep -q "\"file\": \"[^\"]*/$f\"" "$build/compile_commands.json" && files+=("$f")
  done < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.cc')
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "run-clang-tidy: no C++ files to check"
  exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# The build is GCC's: clang must ignore GCC-only warning flags (-Wno-restrict).
printf '%s\0' "${files[@]}" |
  xargs -0 -P 2 -n 1 "$CLANG_TIDY" -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option > "$log" 2>&1 || status=1
grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Use -system-headers' "$log" || true
if [ $status -ne 0 ]; then
  echo "run-clang-tidy: findings in ${#files[@]} checked files (see above)"
  exit 1
fi
echo "run-clang-tidy: ${#files[@]} files clean"
