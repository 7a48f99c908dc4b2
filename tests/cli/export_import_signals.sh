#!/usr/bin/env bash
# N38 (findings 2026-11-27): SIGTERM or kill -9 during kiln export / kiln
# import left full-size temporaries (.tmp_<output>.<pid> beside --output,
# <save>/.tmp_iter_0000000.<pid>) that nothing removed. Now SIGTERM and
# Ctrl-C stop either command between files with one line, exit 1 and the
# temporary removed; after a kill -9 the next export to the same --output,
# or import into the same --save, removes the dead writer's temporary.
# Each signal is sent once the temporary exists; when the command finished
# first anyway (a fast disk), the try is repeated, up to 5 times.
# Usage: export_import_signals.sh <path-to-kiln>
set -uo pipefail
kiln=$1
tmp=$(mktemp -d)
run=
trap '[ -n "$run" ] && kill -9 $run 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1

# About 60 MB of f32 weights, so that writing them takes a while.
timeout 300 "$kiln" train --num-layers 2 --hidden-size 448 --num-attention-heads 7 --seq-length 16 \
  --micro-batch-size 1 --global-batch-size 1 --train-iters 1 --eval-iters 0 --num-threads 2 --save ck \
  >/dev/null 2>err || { cat err; fail "the reference run failed"; }
timeout 120 "$kiln" export --load ck --format hf --output ex >/dev/null 2>err || { cat err; fail "export failed"; }

# start CMD...: runs CMD in the background ($run) and waits until a path
# matching the glob $temp_glob (with the pid for PID) exists; returns 1 when
# the command ended first.
start() {
  "$@" >out 2>err &
  run=$!
  local glob=${temp_glob//PID/$run}
  for _ in $(seq 6000); do
    compgen -G "$glob" >/dev/null && return 0
    kill -0 $run 2>/dev/null || { wait $run; run=; return 1; }
    sleep 0.01
  done
  cat err
  fail "no temporary $glob appeared"
}
finish() { wait $run; rc=$?; run=; }

# $1: name, $2: what must not exist after, rest: the command.
stop_with_term() {
  local name=$1 result=$2
  shift 2
  for try in 1 2 3 4 5; do
    rm -rf "$result" .tmp_* ex_out
    start "$@" || continue
    kill -TERM $run
    finish
    [ $rc -eq 1 ] || { cat err; fail "$name: SIGTERM gave exit $rc (143: it died of the signal)"; }
    [ "$(grep -c . err)" -eq 1 ] && grep -q "stopped by SIGTERM; removed" err || { cat err; fail "$name: not one stop line"; }
    left=$(find . -name '.tmp_*')
    [ -z "$left" ] || fail "$name: SIGTERM left $left"
    echo "ok: $name: $(cat err)"
    return 0
  done
  fail "$name: finished before the signal in 5 tries"
}

temp_glob=".tmp_o.PID"
stop_with_term "export, SIGTERM" o "$kiln" export --load ck --format hf --output o --max-shard-size 1MB
[ ! -e o ] || fail "export, SIGTERM: --output o was written"

temp_glob="im/.tmp_iter_0000000.PID"
stop_with_term "import, SIGTERM" im/iter_0000000 "$kiln" import --format hf --input ex --save im
[ ! -e im/latest_checkpointed_iteration.txt ] || fail "import, SIGTERM: wrote a latest file"

# kill -9 cannot be caught: the next run reaps what it left.
temp_glob=".tmp_o.PID"
rm -rf o
start "$kiln" export --load ck --format hf --output o --max-shard-size 1MB || fail "export ended before kill -9"
dead=$run
kill -9 $run
finish
[ -e ".tmp_o.$dead" ] || fail "kill -9 left no export temporary to reap (test broken?)"
mkdir ".tmp_o.$$"  # a live process's (this shell): kept
timeout 120 "$kiln" export --load ck --format hf --output o >out 2>err || { cat err; fail "the export after kill -9 failed"; }
grep -q "removed 1 temporary left by an interrupted export" err || { cat err; fail "export: no reaping reported"; }
[ ! -e ".tmp_o.$dead" ] || fail "export: the dead export's temporary remains"
[ -d ".tmp_o.$$" ] || fail "export: a live process's temporary was removed"
[ -f o/model.safetensors ] || fail "export: no output after reaping"
echo "ok: export reaps a killed export's temporary"

temp_glob="im/.tmp_iter_0000000.PID"
rm -rf im
start "$kiln" import --format hf --input ex --save im || fail "import ended before kill -9"
dead=$run
kill -9 $run
finish
[ -e "im/.tmp_iter_0000000.$dead" ] || fail "kill -9 left no import temporary to reap (test broken?)"
timeout 120 "$kiln" import --format hf --input ex --save im >out 2>err || { cat err; fail "the import after kill -9 failed"; }
[ ! -e "im/.tmp_iter_0000000.$dead" ] || fail "import: the dead import's temporary remains"
[ -f im/iter_0000000/model.safetensors ] || fail "import: no checkpoint after reaping"
echo "ok: import reaps a killed import's temporary"
