#!/usr/bin/env bash
# kill -9 of a middle pipeline stage (rank 1 of PP=4) ends the job non-zero
# well within 60 s, with a message naming the rank. (A stage that hangs
# instead is named by its neighbours' point-to-point deadline, as a hung rank
# is in tests/cli/mpi_rank_death.sh; not repeated here for its 12 s wait.)
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
mpirun "${mpi_flags[@]}" -np 4 "$kiln" train --num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32 \
  --micro-batch-size 2 --global-batch-size 8 --train-iters 1000000 --log-interval 1 --eval-iters 0 --num-threads 1 \
  --pipeline-model-parallel-size 4 --distributed-timeout-minutes 0.2 --metrics-file "$tmp/run.jsonl" \
  >"$tmp/run.log" 2>&1 &
launcher=$!
for _ in $(seq 600); do
  [ "$(cat "$tmp/run.jsonl" 2>/dev/null | grep -c '"iteration"' || true)" -ge 3 ] && break; sleep 0.1
done
# OpenMPI numbers ranks in launch order: the child whose environment says rank 1.
victim=""
for pid in $(pgrep -P "$launcher" -f "kiln train"); do
  tr '\0' '\n' <"/proc/$pid/environ" | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$pid
done
[ -n "$victim" ] || { echo "cannot find rank 1"; cat "$tmp/run.log"; exit 1; }
start=$SECONDS
kill -9 "$victim"
for _ in $(seq 600); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$launcher" 2>/dev/null; then echo "job still running 60 s after stage 1 died"; cat "$tmp/run.log"; exit 1; fi
status=0
wait "$launcher" || status=$?
[ "$status" != 0 ] || { echo "exit status 0 after a stage died"; exit 1; }
pattern="rank 1.*\(exited on signal 9\|Killed\|sent no heartbeat\)"
grep -q "$pattern" "$tmp/run.log" || { echo "no message naming rank 1:"; cat "$tmp/run.log"; exit 1; }
echo "middle stage killed: job exited with status $status after $((SECONDS - start)) s: $(grep -m1 "$pattern" "$tmp/run.log")"
