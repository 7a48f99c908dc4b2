#!/usr/bin/env bash
# Megatron's --decoupled-lr / --decoupled-min-lr (NVIDIA's Llama-3 8B FP8
# example): the word embedding and the output layer (Megatron's
# is_embedding_or_output_parameter) follow the same schedule between their
# own two rates; every other parameter follows --lr / --min-lr.
#   1. --lr 0 with a decoupled rate: only the embedding and the output layer
#      move (the learned position table and every layer stay bitwise at
#      their start), and the reverse with --decoupled-lr 0;
#   2. the logged rates (the Megatron line's "decoupled learning rate" and
#      the metrics file) are Megatron's OptimizerParamScheduler.get_lr for
#      each group's max_lr and min_lr, computed here in Python;
#   3. PP=2 with a tied embedding (each stage's copy on the decoupled rate),
#      DP=2 with the distributed optimizer and TP=2 follow one process;
#   4. refusals, one line each.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tools="$(dirname "$0")/../tools"
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --log-interval 1 --eval-iters 0 --num-threads 1 --train-iters 8
        --lr-warmup-iters 2 --lr-decay-style cosine --hidden-dropout 0 --attention-dropout 0)
untied=(--untie-embeddings-and-output-weights)

run() {  # name flags...: trains, saving the last iteration, and keeps its log and metrics
  local name=$1; shift
  "$kiln" train "${common[@]}" "$@" --save "$tmp/$name" --metrics-file "$tmp/$name.jsonl" >"$tmp/$name.log"
}
run frozen "${untied[@]}" --lr 0 --min-lr 0 --decoupled-lr 0
run outer "${untied[@]}" --lr 0 --min-lr 0 --decoupled-lr 2e-2 --decoupled-min-lr 2e-3
run inner "${untied[@]}" --lr 1e-2 --min-lr 1e-3 --decoupled-lr 0 --decoupled-min-lr 0

# 1. Which tensors moved, against the run where nothing could.
"$py" - "$tools" "$tmp" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from hf_numpy_common import read_safetensors
tmp = sys.argv[2]
ck = lambda run: read_safetensors(f"{tmp}/{run}/iter_0000008/model.safetensors")
frozen, outer, inner = ck("frozen"), ck("outer"), ck("inner")
decoupled = {"embedding.word_embeddings.weight", "output_layer.weight"}
assert decoupled <= set(frozen), sorted(frozen)
assert "embedding.position_embeddings.weight" in frozen
for run, tensors, moves in (("outer", outer, decoupled), ("inner", inner, set(frozen) - decoupled)):
    for name, (_, start) in frozen.items():
        moved = not np.array_equal(tensors[name][1], start)
        if moved != (name in moves):
            sys.exit(f"{run}: {name} {'moved' if moved else 'did not move'}")
    print(f"{run}: exactly {len(moves)} of {len(frozen)} tensors moved")
PY

# 2. The logged rates, Megatron's formula for each group.
grep -q '| learning rate: 0.000000E+00 | decoupled learning rate: [0-9.E+-]* | global batch size:' \
  "$tmp/outer.log" || { echo "no decoupled learning rate field:"; cat "$tmp/outer.log"; exit 1; }
"$py" - "$tmp" <<'PY'
import json, math, sys
tmp = sys.argv[1]
def get_lr(steps, max_lr, min_lr, warmup=2, decay=8):  # OptimizerParamScheduler.get_lr, cosine
    if warmup > 0 and steps <= warmup:
        return max_lr * steps / warmup
    if steps > decay:
        return min_lr
    ratio = (steps - warmup) / (decay - warmup)
    return min_lr + 0.5 * (math.cos(math.pi * ratio) + 1.0) * (max_lr - min_lr)
for run, main, decoupled in (("outer", (0, 0), (2e-2, 2e-3)), ("inner", (1e-2, 1e-3), (0, 0))):
    lines = [json.loads(l) for l in open(f"{tmp}/{run}.jsonl")]
    assert len(lines) == 8, len(lines)
    for m in lines:
        steps = m["iteration"] - 1  # the rate a step uses is the one after the steps before it
        for key, (hi, lo) in (("learning_rate", main), ("decoupled_learning_rate", decoupled)):
            want = get_lr(steps, hi, lo)
            assert abs(m[key] - want) <= 1e-12 * max(1.0, want), (run, m["iteration"], key, m[key], want)
    print(f"{run}: 8 iterations' learning rate and decoupled learning rate are Megatron's")
PY

# 3. PP=2 with a tied embedding: each stage's copy follows the decoupled rate.
source "$tools/mpi.sh"
pp=(--lr 1e-2 --min-lr 1e-3 --decoupled-lr 3e-2 --num-layers 2)
"$kiln" train "${common[@]}" "${pp[@]}" --metrics-file "$tmp/one.jsonl" >/dev/null
mpi 2 "$kiln" train "${common[@]}" "${pp[@]}" --pipeline-model-parallel-size 2 --metrics-file "$tmp/pp2.jsonl" \
  >/dev/null
same_trajectory "$tmp/one.jsonl" "$tmp/pp2.jsonl" 8 "--decoupled-lr PP=2 vs 1 process"
# The distributed optimizer (each rank's shard of the embedding on the decoupled rate) and TP=2 (its rows).
mpi 2 "$kiln" train "${common[@]}" "${pp[@]}" --use-distributed-optimizer --metrics-file "$tmp/dp2.jsonl" >/dev/null
same_trajectory "$tmp/one.jsonl" "$tmp/dp2.jsonl" 8 "--decoupled-lr DP=2 distributed optimizer vs 1 process"
mpi 2 "$kiln" train "${common[@]}" "${pp[@]}" --tensor-model-parallel-size 2 --metrics-file "$tmp/tp2.jsonl" \
  >/dev/null
same_trajectory "$tmp/one.jsonl" "$tmp/tp2.jsonl" 8 "--decoupled-lr TP=2 vs 1 process"
# The decoupled rate changes the run (else the comparison says nothing about it).
"$kiln" train "${common[@]}" --lr 1e-2 --min-lr 1e-3 --metrics-file "$tmp/plain.jsonl" >/dev/null
[ "$(losses "$tmp/one.jsonl" | tail -1)" != "$(losses "$tmp/plain.jsonl" | tail -1)" ] ||
  { echo "--decoupled-lr 3e-2 trained the same losses as none"; exit 1; }

# 4. Refusals.
refused() {  # expected-text flags...
  local want=$1; shift
  if "$kiln" train "${common[@]}" "$@" >"$tmp/r.out" 2>"$tmp/r.err"; then echo "accepted: $*"; exit 1; fi
  [ "$(wc -l <"$tmp/r.err")" -eq 1 ] && grep -q -- "$want" "$tmp/r.err" ||
    { echo "no one-line '$want' for $*:"; cat "$tmp/r.err"; exit 1; }
}
refused "decoupled-min-lr needs --decoupled-lr" --decoupled-min-lr 1e-4
refused "decoupled-min-lr (0.001, from --min-lr) must not exceed --decoupled-lr (0.0001)" --min-lr 1e-3 \
  --decoupled-lr 1e-4
refused "decoupled-lr" --decoupled-lr nan
echo "--decoupled-lr: the right tensors move, Megatron's rates, PP=2 and refusals pass"
