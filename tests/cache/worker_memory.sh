#!/usr/bin/env bash
# A precompile worker that runs out of memory is retried once with fewer
# workers beside it, and the summary says so. The worker's address space is
# capped (RLIMIT_AS, as `ulimit -v` would, through the worker's test hook
# KILN_TEST_WORKER_MAX_VIRTUAL_MB) below what the faults plugin's compile
# allocates, so malloc really fails there.
# Not under ASan: it caps a worker's address space at 2 GiB (RLIMIT_AS), and
#   ASan reserves terabytes of shadow address space, so the worker cannot even
#   start.
source "$(dirname "$0")/common.bash"
# The counts below are those of whole step graphs (5 per run); per-layer
# units are counted in test_compile_units.cpp and cache.require_precompiled.
export KILN_COMPILE_UNITS=whole
export KILN_TEST_WORKER_MAX_VIRTUAL_MB=2048 KILN_TEST_COMPILE_ALLOC_MB=4096
# Only each graph's first compile allocates: the retry passes.
mkdir "$tmp/markers"
KILN_TEST_COMPILE_ALLOC_ONCE_DIR=$tmp/markers "$kiln" precompile "${model[@]}" --backend faults \
  --cache-dir "$tmp/cache" --num-parallel 2 --json >"$tmp/once.json" 2>"$tmp/once.log" ||
  { cat "$tmp/once.log"; fail "the retried units must pass"; }
grep -m1 "ran out of memory: .*retrying it once with at most 1 worker(s) at a time" "$tmp/once.log" ||
  { cat "$tmp/once.log"; fail "no retry line"; }
grep -q '"retried_for_memory":5' "$tmp/once.json" && grep -q '"compiled":5' "$tmp/once.json" ||
  fail "summary: $(cat "$tmp/once.json")"
[ "$(count_files "$tmp/cache" '*.entry')" = 5 ] || fail "the retried units were not stored"

# Every compile allocates: the retry fails too, and that is the failure.
set +e
"$kiln" precompile "${model[@]}" --backend faults --cache-dir "$tmp/always" --num-parallel 2 --json \
  >"$tmp/always.json" 2>"$tmp/always.log"
status=$?
set -e
[ "$status" = 5 ] || { cat "$tmp/always.log"; fail "exit status $status, expected 5"; }
grep -m1 "FAILED .*ran out of memory .*(after a retry for memory)" "$tmp/always.log" || fail "no failure line"
[ "$(count_files "$tmp/always" '*.failed')" = 0 ] || fail "out of memory must leave no failure marker"
