#!/usr/bin/env bash
# Megatron's interleaved 1F1B schedule under a real mpirun
# (--num-layers-per-virtual-pipeline-stage / --num-virtual-stages-per-pipeline-rank:
# each rank holds several model chunks, the activations go round the ring of
# ranks once per chunk):
#   - PP=2 with 2 chunks per rank (1 layer each) follows the 1-process loss
#     trajectory over 12 steps within 1e-5, for a GPT-2-style model (tied
#     embedding, dropout on) and a Llama-style one, with 4 micro-batches
#     (warm-up, steady and cool-down phases) and with 2 (= P: all warm-up);
#     validation losses agree too;
#   - so do DP=2 x interleaved PP=2 with --use-distributed-optimizer
#     --overlap-grad-reduce --overlap-param-gather, and TP=2 x interleaved PP=2;
#   - checkpoints stay layout-free: saved under interleaved PP=2, resumed by
#     1 process, and the reverse, on the uninterrupted trajectory;
#   - `kiln precompile --world-size 2` builds every chunk's graphs (the run
#     then needs no compilation: --require-precompiled);
#   - Megatron's refusals, in one line.
set -euo pipefail
# Resumes that change the schedule flags (--train-iters sets Megatron's weight-decay
# steps) take the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --lr-warmup-iters 2 --log-interval 1 --num-threads 1 --lr-decay-iters 12)
interleaved=(--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1)

# Validation losses (printed by the last rank) agree within 1e-5 relative.
same_validation() {
  paste <(grep -o "lm loss value: [^ ]*" "$1" | cut -d' ' -f4) <(grep -o "lm loss value: [^ ]*" "$2" | cut -d' ' -f4) |
    awk -v what="$3" '{ d = $1 - $2; if (d < 0) d = -d; if (d / $1 > 1e-5) bad = 1; k++ }
         END { printf "%s: %d evaluations compared\n", what, k; exit bad || k != 2 }'
}

for family in gpt llama; do
  flags=("${common[@]}" --global-batch-size 8 --eval-iters 2 --eval-interval 6 --train-iters 12)
  [ "$family" = llama ] && flags+=("${llama[@]}")
  "$kiln" train "${flags[@]}" --metrics-file "$tmp/$family.jsonl" >"$tmp/$family.log"
  # Megatron's newer spelling of the same layout for the Llama-style model.
  layout=("${interleaved[@]}")
  [ "$family" = llama ] && layout=(--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2)
  mpi 2 "$kiln" train "${flags[@]}" "${layout[@]}" --metrics-file "$tmp/$family-vp.jsonl" >"$tmp/$family-vp.log" 2>&1
  same_trajectory "$tmp/$family.jsonl" "$tmp/$family-vp.jsonl" 12 "$family-style interleaved PP=2 x 2 chunks vs 1 process"
  same_validation "$tmp/$family.log" "$tmp/$family-vp.log" "$family-style interleaved validation"
done
grep -q "pipeline parallel: 2 stages of 2 model chunks of 1 layer each, interleaved 1F1B over 4 micro-batches" \
  "$tmp/gpt-vp.log" || { echo "interleaved run did not report its layout:"; cat "$tmp/gpt-vp.log"; exit 1; }

# As many micro-batches as stages: Megatron's all-warm-up case.
flags=("${common[@]}" --global-batch-size 4 --eval-iters 0 --train-iters 12)
"$kiln" train "${flags[@]}" --metrics-file "$tmp/m2.jsonl" >/dev/null
mpi 2 "$kiln" train "${flags[@]}" "${interleaved[@]}" --metrics-file "$tmp/m2-vp.jsonl" >"$tmp/m2-vp.log" 2>&1
same_trajectory "$tmp/m2.jsonl" "$tmp/m2-vp.jsonl" 12 "interleaved PP=2 with 2 micro-batches vs 1 process"

# Checkpoints: rank 0 writes every chunk's tensors; each chunk loads its own.
flags=("${common[@]}" --global-batch-size 8 --eval-iters 0)
after6() { grep -E '"iteration":([7-9]|1[0-2])[,}]' "$1"; }
"$kiln" train "${flags[@]}" --train-iters 12 --metrics-file "$tmp/one.jsonl" >/dev/null
after6 "$tmp/one.jsonl" >"$tmp/one_after6.jsonl"
mpi 2 "$kiln" train "${flags[@]}" "${interleaved[@]}" --train-iters 6 --save "$tmp/vp" >/dev/null
"$kiln" train "${flags[@]}" --train-iters 12 --load "$tmp/vp" --override-opt_param-scheduler --metrics-file "$tmp/from_vp.jsonl" >/dev/null
same_trajectory "$tmp/one_after6.jsonl" "$tmp/from_vp.jsonl" 6 "saved under interleaved PP=2, resumed by 1 process"
"$kiln" train "${flags[@]}" --train-iters 6 --save "$tmp/one" >/dev/null
mpi 2 "$kiln" train "${flags[@]}" "${interleaved[@]}" --train-iters 12 --load "$tmp/one" --override-opt_param-scheduler \
  --metrics-file "$tmp/to_vp.jsonl" >/dev/null
same_trajectory "$tmp/one_after6.jsonl" "$tmp/to_vp.jsonl" 6 "saved by 1 process, resumed under interleaved PP=2"

# A rank's chunks are just more layers to the distributed optimizer and to
# tensor parallelism (4 ranks each). With the overlap flags each chunk's
# buckets start during (and right after) its last backward, and its first
# forward waits for its parameters' buckets only.
KILN_LOG_LEVEL=debug mpi 4 "$kiln" train "${flags[@]}" "${interleaved[@]}" --train-iters 12 --use-distributed-optimizer \
  --overlap-grad-reduce --overlap-param-gather --ddp-bucket-size 2048 --metrics-file "$tmp/dp2.jsonl" \
  >"$tmp/dp2.log" 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/dp2.jsonl" 12 "DP=2 x interleaved PP=2 with the overlapped distributed optimizer vs 1 process"
early=$(grep -Ec "gradient reduce-scatter: [1-9][0-9]* of [0-9]+ buckets started during backward" "$tmp/dp2.log" || true)
inside=$(grep -Ec "parameter all-gather: [1-9][0-9]* of [0-9]+ buckets awaited after the forward began" "$tmp/dp2.log" ||
  true)
[ "$early" = 12 ] && [ "$inside" = 11 ] ||
  { echo "DP=2 x interleaved PP=2: $early steps reduce-scattered during backward (want 12), $inside gathered inside the forward (want 11)"; exit 1; }
mpi 4 "$kiln" train "${flags[@]}" "${interleaved[@]}" --train-iters 12 --tensor-model-parallel-size 2 \
  --metrics-file "$tmp/tp2.jsonl" >"$tmp/tp2.log" 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/tp2.jsonl" 12 "TP=2 x interleaved PP=2 vs 1 process"

# precompile builds what every chunk of every rank runs.
"$kiln" precompile "${flags[@]}" "${interleaved[@]}" --world-size 2 --cache-dir "$tmp/cache" >"$tmp/precompile.log"
mpi 2 "$kiln" train "${flags[@]}" "${interleaved[@]}" --train-iters 1 --cache-dir "$tmp/cache" --require-precompiled \
  >"$tmp/precompiled.log" 2>&1 || { echo "interleaved run needed graphs precompile did not build:"; cat "$tmp/precompiled.log"; exit 1; }

# Megatron's refusals: one line, non-zero exit.
expect_error() {  # expect_error PATTERN COMMAND...
  local pattern=$1 status=0; shift
  "$@" >"$tmp/bad.log" 2>&1 || status=$?
  [ "$status" != 0 ] && grep -q -- "$pattern" "$tmp/bad.log" ||
    { echo "expected a failure matching '$pattern' (status $status):"; cat "$tmp/bad.log"; exit 1; }
}
expect_error "pipeline-model-parallel size should be greater than 1 with interleaved schedule" \
  "$kiln" train "${flags[@]}" --num-layers-per-virtual-pipeline-stage 1
expect_error "number of layers per pipeline stage must be divisible number of layers per virtual pipeline stage" \
  mpi 2 "$kiln" train "${flags[@]}" --num-layers 6 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2
expect_error "num-layers 6 is not divisible by --pipeline-model-parallel-size 2 x --num-virtual-stages-per-pipeline-rank 2" \
  mpi 2 "$kiln" train "${flags[@]}" --num-layers 6 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2
expect_error "number of microbatches (3) is not divisible by pipeline-model-parallel-size (2) when using interleaved schedule" \
  mpi 2 "$kiln" train "${flags[@]}" --global-batch-size 6 "${interleaved[@]}"
expect_error "cannot be set at the same time" \
  mpi 2 "$kiln" train "${flags[@]}" "${interleaved[@]}" --num-virtual-stages-per-pipeline-rank 2
echo "interleaved pipeline refusals in one line"
