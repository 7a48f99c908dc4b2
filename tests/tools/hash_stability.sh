#!/usr/bin/env bash
# Runs the graph hasher in two processes with different heap layouts and
# environments; the printed hashes must be identical and non-empty.
set -euo pipefail
a=$(env -i MALLOC_PERTURB_=0 "$1")
b=$(env -i MALLOC_PERTURB_=165 KILN_LOG_LEVEL=debug SOME_PADDING="$(head -c 4096 /dev/zero | tr '\0' x)" "$1")
echo "$a"
[ "$(echo "$a" | wc -l)" -eq 4 ] || { echo "expected 4 hashes"; exit 1; }
[ "$a" = "$b" ] || { echo "hashes differ between processes:"; echo "$b"; exit 1; }
# Different graphs must not collide.
[ "$(echo "$a" | awk '{print $2}' | sort -u | wc -l)" -eq 4 ] || { echo "distinct graphs share a hash"; exit 1; }
