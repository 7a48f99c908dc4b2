#!/usr/bin/env bash
# SIGTERM to `kiln precompile` while its workers compile (issue 13, item 15).
# Before: the parent died at once, its workers compiled on as orphans, and
# /tmp/kiln-precompile-XXXXXX was left behind, always under /tmp whatever
# $TMPDIR said. Now the workers are stopped and reaped, the scratch directory
# (under $TMPDIR) is removed, and the command exits non-zero with one line.
source "$(dirname "$0")/common.bash"
set +e
cache=$tmp/cache
export TMPDIR=$tmp/tmpdir
mkdir "$TMPDIR"
pid=
cleanup() {  # a failing run must not leave its own processes behind either
  [ -n "$pid" ] && { pkill -KILL -P "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null; }
  pkill -KILL -f -- "--worker $TMPDIR/" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
workers() { pgrep -f -- "--worker $TMPDIR/kiln-precompile-" | wc -l; }

# Each compile sleeps long enough that the workers are still compiling when
# the signal comes, however loaded the machine.
KILN_TEST_COMPILE_SLEEP_MS=120000 "$kiln" precompile "${model[@]}" --backend faults --cache-dir "$cache" \
  --num-parallel 2 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 600); do
  [ "$(workers)" -ge 2 ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ "$(workers)" -ge 2 ] || { cat "$tmp/out" "$tmp/err"; ls -la "$TMPDIR"; fail "no 2 workers with task files under \$TMPDIR"; }
scratch=$(ls -d "$TMPDIR"/kiln-precompile-*)
echo "workers running: $(workers), scratch directory $scratch"

kill -TERM "$pid"
for _ in $(seq 600); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "precompile still runs 60 s after SIGTERM"
wait "$pid"
rc=$?
pid=
[ $rc -ne 0 ] || fail "precompile exited 0 after SIGTERM"
[ "$(grep -c . "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "expected one line on stderr"; }
grep -q "^kiln: error: precompile stopped by SIGTERM: 2 worker(s) stopped, .*scratch directory $scratch is removed$" \
  "$tmp/err" || { cat "$tmp/err"; fail "the line does not say what was stopped"; }
echo "ok: $(cat "$tmp/err")"
# The parent reaped its workers before exiting: none may be left.
[ "$(workers)" -eq 0 ] || { pgrep -af -- "--worker $TMPDIR/"; fail "workers outlived precompile"; }
[ ! -e "$scratch" ] || fail "the scratch directory $scratch was left behind"
[ -z "$(ls -A "$TMPDIR")" ] || { ls -la "$TMPDIR"; fail "something was left in \$TMPDIR"; }
"$kiln" cache verify --cache-dir "$cache" >/dev/null || fail "a partial entry is visible after SIGTERM"
echo "ok: no worker survives, $scratch is gone"
