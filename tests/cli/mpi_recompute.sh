#!/usr/bin/env bash
# Activation recomputation under TP=2 x PP=2 (4 ranks), with dropout on:
# full/uniform/1 replays each layer's all-reduces in backward, and a stage's
# train step (which already recomputes its forward) recomputes its layers
# again; selective recomputes the attention core on each rank's heads. The
# losses and gradient norms are bitwise those of the same layout without
# recomputation (tests/cli/recompute.sh covers one process).
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --micro-batch-size 2
        --global-batch-size 4 --train-iters 3 --eval-iters 0 --log-interval 1 --num-threads 1
        --hidden-dropout 0.2 --attention-dropout 0.2 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2)
pick() { grep -o '"grad_norm":[^,]*\|"lm_loss":[^,]*' "$1"; }
run() { local out=$1; shift; mpi 4 "$kiln" train "${common[@]}" "$@" --metrics-file "$tmp/$out.jsonl" >"$tmp/$out.log" 2>&1 ||
          { cat "$tmp/$out.log"; echo "FAIL: run $out"; exit 1; }; }
run plain
run selective --recompute-activations
run uniform --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
[ "$(pick "$tmp/plain.jsonl" | grep -c lm_loss)" = 3 ] || { echo "FAIL: no 3 losses"; exit 1; }
for r in selective uniform; do
  diff <(pick "$tmp/plain.jsonl") <(pick "$tmp/$r.jsonl") >/dev/null ||
    { paste <(pick "$tmp/plain.jsonl") <(pick "$tmp/$r.jsonl"); echo "FAIL: $r changed the losses"; exit 1; }
done
echo "ok: TP=2 x PP=2, selective and full/uniform/1 bitwise identical to no recomputation"
