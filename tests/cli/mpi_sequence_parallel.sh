#!/usr/bin/env bash
# Sequence parallelism (--sequence-parallel, Megatron's) under a real
# mpirun: with TP=2 the norms, dropout and residual adds run on each rank's
# half of the sequence, and the tensor-parallel layers all-gather their
# input and reduce-scatter their output.
#   - TP=2 with it follows the 1-process loss trajectory over 12 steps
#     within 1e-5, GPT-2-style (learned positions, tied embedding, dropout
#     on: each rank draws one process's masks for its tokens) and
#     Llama-style (RoPE, RMSNorm, SwiGLU, grouped queries);
#   - so does TP=2 x PP=2 with it (stages hand on their half-sequences);
#   - with TP=1 the flag is dropped with Megatron's warning, and a sequence
#     the group cannot halve is refused in one line.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --lr-warmup-iters 2 --log-interval 1 --eval-iters 2 --eval-interval 6
        --num-threads 1 --train-iters 12)
sp=(--tensor-model-parallel-size 2 --sequence-parallel)

for family in gpt llama; do
  flags=("${common[@]}")
  [ "$family" = llama ] && flags+=("${llama[@]}")
  "$kiln" train "${flags[@]}" --metrics-file "$tmp/$family.jsonl" >/dev/null 2>&1
  mpi 2 "$kiln" train "${flags[@]}" "${sp[@]}" --metrics-file "$tmp/$family-sp.jsonl" >"$tmp/$family-sp.log" 2>&1 ||
    { cat "$tmp/$family-sp.log"; exit 1; }
  same_trajectory "$tmp/$family.jsonl" "$tmp/$family-sp.jsonl" 12 "$family-style TP=2 --sequence-parallel vs 1 process"
done

mpi 4 "$kiln" train "${common[@]}" "${sp[@]}" --num-layers 4 --pipeline-model-parallel-size 2 \
  --metrics-file "$tmp/pp.jsonl" >"$tmp/pp.log" 2>&1 || { cat "$tmp/pp.log"; exit 1; }
"$kiln" train "${common[@]}" --num-layers 4 --metrics-file "$tmp/gpt4.jsonl" >/dev/null 2>&1
same_trajectory "$tmp/gpt4.jsonl" "$tmp/pp.jsonl" 12 "TP=2 --sequence-parallel x PP=2 vs 1 process"

"$kiln" train "${common[@]}" --sequence-parallel --train-iters 3 >"$tmp/tp1.log" 2>&1
grep -q "Disabling sequence parallelism because tensor model parallelism is disabled" "$tmp/tp1.log" ||
  { echo "no warning for --sequence-parallel without tensor parallelism:"; cat "$tmp/tp1.log"; exit 1; }
status=0
mpi 2 "$kiln" train "${common[@]}" "${sp[@]}" --seq-length 31 >"$tmp/odd.log" 2>&1 || status=$?
[ "$status" != 0 ] && grep -q "seq-length 31 is not divisible by --tensor-model-parallel-size 2" "$tmp/odd.log" ||
  { echo "an odd sequence was not refused clearly (status $status):"; cat "$tmp/odd.log"; exit 1; }
echo "--sequence-parallel: TP=1 warns and trains, an odd sequence is refused"
