#!/usr/bin/env bash
# Locks left by a dead process on this host, and by a holder elsewhere whose
# heartbeat stopped long ago, are taken over at once.
source "$(dirname "$0")/common.bash"
cache=$tmp/cache
"$kiln" precompile "${model[@]}" --cache-dir "$cache" >"$tmp/pre.log" 2>&1
mapfile -t entries < <(find "$cache" -name '*.entry' | sort)
bash -c 'exit 0' & dead=$!; wait $dead
# Entry 0: its lock holder is a dead pid here. Entry 1: another node, silent for an hour.
rm "${entries[0]}" "${entries[1]}"
echo "$(hostname) $dead 0123456789abcdef" >"${entries[0]%.entry}.lock"
echo "some-other-node 1 fedcba9876543210" >"${entries[1]%.entry}.lock"
touch -d '1 hour ago' "${entries[1]%.entry}.lock"
"$kiln" cache ls --cache-dir "$cache" | grep LOCKED
start=$(date +%s)
"$kiln" precompile "${model[@]}" --cache-dir "$cache" >"$tmp/take.log" 2>&1 || { cat "$tmp/take.log"; fail "precompile"; }
elapsed=$(( $(date +%s) - start ))
grep -E "^(Total|Already)" "$tmp/take.log"
[ "$(summary "Total successful compilations" "$tmp/take.log")" = 2 ] || fail "expected the 2 locked keys to compile"
[ "$(count_files "$cache" '*.lock')" = 0 ] || fail "locks left"
[ "$elapsed" -lt 60 ] || fail "took ${elapsed}s: the stale locks were waited on"
