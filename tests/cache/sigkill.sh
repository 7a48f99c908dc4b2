#!/usr/bin/env bash
# SIGKILL of a precompile (parent and workers) in the middle of compiling
# leaves no visible partial entry; the next run takes over the dead
# processes' locks and completes.
source "$(dirname "$0")/common.bash"
cache=$tmp/cache
KILN_TEST_COMPILE_SLEEP_MS=20000 setsid "$kiln" precompile "${model[@]}" --backend faults --cache-dir "$cache" \
  --num-parallel 2 >"$tmp/killed.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
  [ "$(count_files "$cache" '*.lock')" -ge 1 ] && break
  sleep 0.1
done
[ "$(count_files "$cache" '*.lock')" -ge 1 ] || { cat "$tmp/killed.log"; fail "no compilation started"; }
kill -KILL -- "-$pid"
wait "$pid" 2>/dev/null || true
sleep 0.2
echo "after SIGKILL: $(count_files "$cache" '*.entry') entries, $(count_files "$cache" '*.lock') locks"
"$kiln" cache verify --cache-dir "$cache" || fail "a partial entry is visible after SIGKILL"
[ "$(count_files "$cache" '*.failed')" = 0 ] || fail "a killed compile left a failure marker"

"$kiln" precompile "${model[@]}" --backend faults --cache-dir "$cache" --num-parallel 2 >"$tmp/next.log" 2>&1 ||
  { cat "$tmp/next.log"; fail "the run after SIGKILL did not complete"; }
grep -E "^(Total|Already)" "$tmp/next.log"
[ "$(count_files "$cache" '*.lock')" = 0 ] || fail "stale locks were not taken over"
"$kiln" train "${model[@]}" --backend faults --cache-dir "$cache" --require-precompiled >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; fail "train after recovery"; }
