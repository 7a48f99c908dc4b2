#!/usr/bin/env bash
# Runs the graph hasher in two processes with different heap layouts and
# environments; the printed graph hashes and compile-cache keys must be
# identical and non-empty.
set -euo pipefail
a=$(env -i MALLOC_PERTURB_=0 "$1")
b=$(env -i MALLOC_PERTURB_=165 KILN_LOG_LEVEL=debug SOME_PADDING="$(head -c 4096 /dev/zero | tr '\0' x)" "$1")
echo "$a"
[ "$(echo "$a" | wc -l)" -eq 4 ] || { echo "expected 4 lines"; exit 1; }
[ "$(echo "$a" | awk 'NF == 3 && length($2) == 64 && length($3) == 64' | wc -l)" -eq 4 ] ||
  { echo "expected a 64-hex graph hash and cache key per line"; exit 1; }
[ "$a" = "$b" ] || { echo "hashes or keys differ between processes:"; echo "$b"; exit 1; }
# Different graphs must not collide.
[ "$(echo "$a" | awk '{print $2}' | sort -u | wc -l)" -eq 4 ] || { echo "distinct graphs share a hash"; exit 1; }
[ "$(echo "$a" | awk '{print $3}' | sort -u | wc -l)" -eq 4 ] || { echo "distinct graphs share a cache key"; exit 1; }
