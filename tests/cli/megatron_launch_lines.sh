#!/usr/bin/env bash
# Real Megatron launch lines train with kiln as written (issue 34), one
# process each; the multi-rank ones: mpi_megatron_launch_lines.sh.
#   NVIDIA/Megatron-LM examples/pretrain_gpt.sh at
#     152aab304d (2021-01-11): --checkpoint-activations, --data-impl mmap, --distributed-backend nccl
#     c1e0689d92 (2021-08-10): --activations-checkpoint-method uniform instead
#     7625a9d203 (2023-02-17): --data-impl mmap only
#     34ac1ad05e (2023-09-07): none of the legacy flags
#   all with --vocab-file/--merge-file and no --tokenizer-type (GPT2BPETokenizer inferred);
#   examples/gpt3/train_gpt3_175b_distributed.sh at
#     fa0dcc48720ed9f440f36c7973fe5e7a54c7d208 (2024-12-07): --rampup-batch-size 16 16 5859375 with
#       --train-iters (Megatron refuses the pair; kiln's extension trains it, docs/CLI.md)
#     d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22; its training line unchanged since 532ad926b4,
#       2026-04-21): --step-batch-size-schedule with --global-batch-size 1536 (its last batch size)
#     the script's --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 as 1 1 (one
#     process), its --global-batch-size, ramp and schedule as written (16 for the 20 steps here);
#   aws-samples/awsome-distributed-training 3.test_cases/megatron/megatron-lm/slurm/gpt3/
#     README.md at e58dcdbc (2025-11-25): 2.distributed-training.sbatch's line with its
#     appendix 4.1 (benchmark mode: --eval-iters 0 --split 100,0,0) and 4.2 (--train-iters)
#     applied; TENSOR_PARALLEL=1 PIPELINE_PARALLEL=1 (the script's variables) for one process.
# Scaled in shape only: --num-layers 2, --hidden-size 64, --num-attention-heads 4,
# --seq-length/--max-position-embeddings 32, batch 4 (AWS: 2), 20 iterations
# (--train-iters/--lr-decay-iters 20, AWS 20/18/1: --fp16's dynamic loss scale
# starts at 2^32 and skips the first 16 steps, as Megatron's), --log-interval 1,
# --eval-interval 10 --eval-iters 2 (GPT-3: --eval-iters 1, since an evaluation is --eval-iters
# steps of the full --global-batch-size, 1536 samples, as Megatron's), --save-interval 20 (GPT-3:
# --lr-decay-iters 17, 430000/500000 of them); --num-threads 2 added
# (this machine). Everything else is the script's, in its order. The data is
# made here with kiln preprocess, as Megatron's README makes it.
# Not under ASan: 7 fp16 runs (25 s in release, 60 s on a busy 2-core machine) that check which flags are
#   accepted; the trainer paths they take run under ASan in shorter tests.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../tools/launch_data.sh"
ck=$tmp/ckpt

# examples/pretrain_gpt.sh, 2021-01-11 (152aab304d) and 2021-08-10 (c1e0689d92): the same line
# but for the recompute flag.
for version in 2021_01 2021_08; do
  recompute=(--checkpoint-activations); [ "$version" = 2021_08 ] && recompute=(--activations-checkpoint-method uniform)
  trains "gpt_$version" "$kiln" train \
       --num-layers 2 --hidden-size 64 --num-attention-heads 4 --micro-batch-size 2 --global-batch-size 4 \
       --seq-length 32 --max-position-embeddings 32 --train-iters 20 --lr-decay-iters 20 \
       --save "$ck/$version" --load "$ck/$version" --data-path "$data" --vocab-file "$vocab" --merge-file "$merges" \
       --data-impl mmap --split 949,50,1 --distributed-backend nccl --lr 0.00015 --min-lr 1.0e-5 \
       --lr-decay-style cosine --weight-decay 1e-2 --clip-grad 1.0 --lr-warmup-fraction .01 \
       "${recompute[@]}" --log-interval 1 --save-interval 20 --eval-interval 10 --eval-iters 2 --fp16 \
       --num-threads 2
  logged "gpt_$version" "--tokenizer-type not given: using GPT2BPETokenizer"
  logged "gpt_$version" "Megatron flags accepted with no effect in kiln (docs/CLI.md): --data-impl mmap, --distributed-backend nccl"
  logged "gpt_$version" "${recompute[0]}: recomputing as --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
  logged "gpt_$version" "saved checkpoint at iteration 20"
done

# examples/pretrain_gpt.sh, 2023-02-17 (7625a9d203): GPT_ARGS, DATA_ARGS, OUTPUT_ARGS, --save, --load.
trains gpt_2023_02 "$kiln" train \
    --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
    --micro-batch-size 2 --global-batch-size 4 --lr 0.00015 --train-iters 20 --lr-decay-iters 20 \
    --lr-decay-style cosine --min-lr 1.0e-5 --weight-decay 1e-2 --lr-warmup-fraction .01 --clip-grad 1.0 --fp16 \
    --data-path "$data" --vocab-file "$vocab" --merge-file "$merges" --data-impl mmap --split 949,50,1 \
    --log-interval 1 --save-interval 20 --eval-interval 10 --eval-iters 2 \
    --save "$ck/2023_02" --load "$ck/2023_02" --num-threads 2
logged gpt_2023_02 "Megatron flags accepted with no effect in kiln (docs/CLI.md): --data-impl mmap"

# examples/pretrain_gpt.sh, 2023-09-07 (34ac1ad05e): --data-impl gone.
trains gpt_2023_09 "$kiln" train \
    --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
    --micro-batch-size 2 --global-batch-size 4 --lr 0.00015 --train-iters 20 --lr-decay-iters 20 \
    --lr-decay-style cosine --min-lr 1.0e-5 --weight-decay 1e-2 --lr-warmup-fraction .01 --clip-grad 1.0 --fp16 \
    --data-path "$data" --vocab-file "$vocab" --merge-file "$merges" --split 949,50,1 \
    --log-interval 1 --save-interval 20 --eval-interval 10 --eval-iters 2 \
    --save "$ck/2023_09" --load "$ck/2023_09" --num-threads 2
logged gpt_2023_09 "--tokenizer-type not given: using GPT2BPETokenizer"
# The inferred type is recorded like a given one: generate finds it in the checkpoint.
"$kiln" generate --load "$ck/2023_09" --prompt "The" --max-new-tokens 2 --num-threads 2 >/dev/null 2>"$tmp/gen.err" ||
  { cat "$tmp/gen.err"; echo "FAIL: generate from the inferred tokenizer's checkpoint"; exit 1; }

# AWS GPT-3 README variant (benchmark mode, --train-iters): MEGATRON_PARALLELISM, MEGATRON_ARGS, then the line.
trains aws_readme "$kiln" train \
        --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 \
        --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
        --micro-batch-size 1 --global-batch-size 2 \
        --train-iters 20 --lr-decay-iters 18 --lr-warmup-iters 1 \
        --lr 6.0e-5 --min-lr 6.0e-6 --lr-decay-style cosine --log-interval 1 --eval-iters 0 \
        --data-path "$data" --vocab-file "$vocab" --merge-file "$merges" --split 100,0,0 \
        --clip-grad 1.0 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 --init-method-std 0.006 \
        --fp16 --recompute-activations --num-threads 2

# examples/gpt3/train_gpt3_175b_distributed.sh: GPT_MODEL_ARGS, TRAINING_ARGS, MODEL_PARALLEL_ARGS,
# DATA_ARGS, EVAL_AND_LOGGING_ARGS; the 2024 version ramps, the 2026 one steps the batch.
gpt3_175b() {  # NAME, then the batch-schedule flags of that version
  local name=$1; shift
  trains "$name" "$kiln" train \
      --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
      --attention-backend auto \
      --micro-batch-size 1 --global-batch-size 1536 "$@" --train-iters 20 \
      --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 --init-method-std 0.006 --clip-grad 1.0 --fp16 \
      --lr 6.0e-5 --lr-decay-style cosine --min-lr 6.0e-6 --lr-warmup-fraction .001 --lr-decay-iters 17 \
      --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 \
      --data-path "$data" --vocab-file "$vocab" --merge-file "$merges" --split 949,50,1 \
      --log-interval 1 --save-interval 20 --eval-interval 10 --save "$ck/$name" --load "$ck/$name" --eval-iters 1 \
      --tensorboard-dir "$tmp/tb_$name" --num-threads 2
  # The ramp's and the schedule's first 2.4B tokens take batch 16: 20 steps, 320 samples.
  logged "$name" "global batch size:    16 |"
  logged "$name" "consumed samples:          320 |"
  logged "$name" "saved checkpoint at iteration 20"
  if grep -q "global batch size: *1536 |" "$tmp/$name.log"; then echo "FAIL: $name stepped at 1536"; exit 1; fi
}
gpt3_175b gpt3_175b_2024 --rampup-batch-size 16 16 5859375
logged gpt3_175b_2024 "will use batch size rampup starting from global batch size 16 to global batch size 1536"
gpt3_175b gpt3_175b_2026 --step-batch-size-schedule "0:16 2.4B:320 4.8B:624 7.2B:928 9.6B:1232 12B:1536"
logged gpt3_175b_2026 ">= 2400000000 tokens (75000000 samples) -> batch_size=320, num_microbatches=320"

# The legacy flags' other values: infer is read (kiln checks the .idx header);
# the formats kiln does not read are refused in one line before any work.
base=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2 --train-iters 1
      --data-path "$data" --vocab-file "$vocab" --merge-file "$merges" --eval-iters 0 --log-interval 1 --num-threads 2)
trains data_impl_infer "$kiln" train "${base[@]}" --data-impl infer --distributed-backend gloo
refused() {  # expected message part, then flags
  local want=$1; shift
  if "$kiln" train "${base[@]}" "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"; then echo "FAIL: accepted: $*"; exit 1; fi
  [ "$(grep -c . "$tmp/bad.err")" -eq 1 ] && grep -qF -- "$want" "$tmp/bad.err" ||
    { cat "$tmp/bad.err"; echo "FAIL: no one-line '$want' for: $*"; exit 1; }
  echo "ok: $(cat "$tmp/bad.err")"
}
refused "--data-impl cached: kiln reads Megatron's mmap" --data-impl cached
refused "--data-impl lazy: kiln reads Megatron's mmap" --data-impl lazy
refused "--distributed-backend mpi: not one of Megatron's choices (nccl, gloo)" --distributed-backend mpi
# Only a vocab plus merges pair is GPT-2 BPE: a vocab alone still needs the type.
if "$kiln" train --data-path "$data" --vocab-file "$vocab" >"$tmp/bad.out" 2>"$tmp/bad.err"; then
  echo "FAIL: --vocab-file alone was accepted"; exit 1
fi
grep -q "needs --tokenizer-type" "$tmp/bad.err" || { cat "$tmp/bad.err"; echo "FAIL: --vocab-file alone"; exit 1; }
# kiln preprocess infers it the same way.
"$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/inferred" --vocab-file "$vocab" \
  --merge-file "$merges" --append-eod --workers 2 2>"$tmp/pre.err" || { cat "$tmp/pre.err"; exit 1; }
grep -q -- "--tokenizer-type not given: using GPT2BPETokenizer" "$tmp/pre.err" || { cat "$tmp/pre.err"; exit 1; }
cmp "$tmp/inferred_text_document.bin" "$data.bin" && cmp "$tmp/inferred_text_document.idx" "$data.idx"
echo "launch lines: all trained"
