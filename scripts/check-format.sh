#!/usr/bin/env bash
# Checks that the C and C++ sources follow .clang-format (clang-format 14, as
# Debian 12 ships it, so every machine formats identically).
#
#   scripts/check-format.sh            check every tracked (and new, not ignored) file
#   scripts/check-format.sh FILE...    check only these files
#   scripts/check-format.sh --fix ...  reformat in place instead of checking
#
# Generated files (a "do not edit" note in their first lines) are skipped.
# Exit status: 0 when everything is formatted (or was fixed), 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi

CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$CLANG_FORMAT" > /dev/null; then
  echo "check-format: $CLANG_FORMAT not found (scripts/install-deps.sh installs clang-format-14)" >&2
  exit 2
fi

files=()
if [ $# -gt 0 ]; then
  files=("$@")
else
  while IFS= read -r f; do
    [ -f "$f" ] || continue
    head -n 3 "$f" | grep -qi "do not edit" && continue
    files+=("$f")
  done < <(git ls-files --cached --others --exclude-standard -- \
             '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' '*.cxx' | sort -u)
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "check-format: no files to check"
  exit 0
fi

if [ $fix -eq 1 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -P 2 -n 16 "$CLANG_FORMAT" -i --style=file
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi

# One line per badly formatted file (clang-format prints a warning for every
# wrong spot; the first one per file is enough to find it).
bad=()
while IFS= read -r f; do
  [ -n "$f" ] && bad+=("$f")
done < <(printf '%s\0' "${files[@]}" |
           xargs -0 -P 2 -n 16 "$CLANG_FORMAT" --dry-run --Werror --style=file 2>&1 |
           sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)

if [ ${#bad[@]} -eq 0 ]; then
  echo "check-format: ${#files[@]} files formatted"
  exit 0
fi
echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
printf '  %s\n' "${bad[@]}"
echo "run scripts/check-format.sh --fix (or $CLANG_FORMAT -i FILE) and commit the result"
exit 1
