#!/usr/bin/env bash
# Real multi-rank Megatron launch lines train with kiln as written (issue 34),
# under a real mpirun; the one-process lines: megatron_launch_lines.sh.
#   NVIDIA/Megatron-LM examples/pretrain_gpt_distributed_with_mp.sh at
#     c1e0689d92 (2021-08-10): TP 2, PP 2, --data-impl mmap, --distributed-backend nccl,
#                              --activations-checkpoint-method uniform
#     b83477a3e8 (2022-05-19): the same with --sequence-parallel
#     94dbfd1cd3 (2023-02-17): GPT_ARGS/DATA_ARGS/OUTPUT_ARGS, --data-impl mmap, --distributed-backend nccl
#   on 4 ranks (8 GPUs in the script: data-parallel 2 -> 1), TP and PP as written;
#   aws-samples/awsome-distributed-training 3.test_cases/megatron/megatron-lm at e58dcdbc (2025-11-25):
#     slurm/gpt3/2.distributed-training.sbatch (--train-samples) on 2 ranks with the script's
#     variables TENSOR_PARALLEL=1 PIPELINE_PARALLEL=2, and
#     kubernetes/gpt3/manifests/pytorchjob.yaml-template (--flag=value) on 2 ranks, TP 2, PP 1.
# All pass --vocab-file/--merge-file with no --tokenizer-type (GPT2BPETokenizer inferred).
# Scaled in shape only: --num-layers 4, --hidden-size 64, --num-attention-heads 4,
# --seq-length/--max-position-embeddings 32, micro-batch 2 (AWS: 1), global batch 4 (AWS: 2),
# 20 iterations (--fp16's loss scale skips the first 16, as Megatron's; AWS: --train-samples 40
# --lr-decay-samples 34 --lr-warmup-samples 1), --log-interval 1, --eval-interval 10
# --eval-iters 2, --save-interval 20; --num-threads 1 added (this machine). The rest is the
# script's, in its order.
# Not here: pretrain_gpt_distributed_with_mp.sh at 34ac1ad05e (2023-09) differs from
# 94dbfd1cd3 only by dropping --data-impl; megatron_launch_lines.sh runs that form.
# Not under ASan: 5 multi-rank fp16 runs (33 s in release) that check which flags
#   are accepted; the trainer paths they take run under ASan in the mpi_* tests.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../tools/launch_data.sh"
ck=$tmp/ckpt

# pretrain_gpt_distributed_with_mp.sh, 2021-08-10 (c1e0689d92) and 2022-05-19 (b83477a3e8).
for version in 2021_08 2022_05; do
  sp=(); [ "$version" = 2022_05 ] && sp=(--sequence-parallel)
  trains "mp_$version" mpi 4 "$kiln" train \
       --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "${sp[@]}" \
       --num-layers 4 --hidden-size 64 --num-attention-heads 4 --micro-batch-size 2 --global-batch-size 4 \
       --seq-length 32 --max-position-embeddings 32 --train-iters 20 --lr-decay-iters 20 \
       --save "$ck/$version" --load "$ck/$version" --data-path "$data" --vocab-file "$vocab" --merge-file "$merges" \
       --data-impl mmap --split 949,50,1 --distributed-backend nccl --lr 0.00015 --lr-decay-style cosine \
       --min-lr 1.0e-5 --weight-decay 1e-2 --clip-grad 1.0 --lr-warmup-fraction .01 \
       --activations-checkpoint-method uniform --log-interval 1 --save-interval 20 --eval-interval 10 \
       --eval-iters 2 --fp16 --num-threads 1
  logged "mp_$version" "--activations-checkpoint-method: recomputing as --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
  logged "mp_$version" "saved checkpoint at iteration 20"
done

# pretrain_gpt_distributed_with_mp.sh, 2023-02-17 (94dbfd1cd3).
trains mp_2023_02 mpi 4 "$kiln" train \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel \
    --num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
    --micro-batch-size 2 --global-batch-size 4 --lr 0.00015 --train-iters 20 --lr-decay-iters 20 \
    --lr-decay-style cosine --min-lr 1.0e-5 --weight-decay 1e-2 --lr-warmup-fraction .01 --clip-grad 1.0 --fp16 \
    --data-path "$data" --vocab-file "$vocab" --merge-file "$merges" --data-impl mmap --split 949,50,1 \
    --log-interval 1 --save-interval 20 --eval-interval 10 --eval-iters 2 \
    --distributed-backend nccl --save "$ck/2023_02" --load "$ck/2023_02" --num-threads 1
logged mp_2023_02 "--tokenizer-type not given: using GPT2BPETokenizer"
logged mp_2023_02 "Megatron flags accepted with no effect in kiln (docs/CLI.md): --data-impl mmap, --distributed-backend nccl"

# AWS GPT-3 2.distributed-training.sbatch: MEGATRON_PARALLELISM, MEGATRON_ARGS, then the line.
trains aws_sbatch mpi 2 "$kiln" train \
        --tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 \
        --num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
        --micro-batch-size 1 --global-batch-size 2 \
        --train-samples 40 --lr-decay-samples 34 --lr-warmup-samples 1 \
        --lr 6.0e-5 --min-lr 6.0e-6 --lr-decay-style cosine --log-interval 1 --eval-iters 2 --eval-interval 10 \
        --data-path "$tmp/gpt2/my-gpt2_text_document" --vocab-file "$vocab" --merge-file "$merges" \
        --split 98,2,0 --clip-grad 1.0 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 \
        --init-method-std 0.006 --fp16 --recompute-activations --num-threads 1

# AWS GPT-3 Kubernetes pytorchjob.yaml-template's args.
trains aws_kubernetes mpi 2 "$kiln" train \
                --tensor-model-parallel-size=2 --pipeline-model-parallel-size=1 --num-layers=4 --hidden-size=64 \
                --num-attention-heads=4 --seq-length=32 --max-position-embeddings=32 --micro-batch-size=1 \
                --global-batch-size=2 --train-samples=40 --lr-decay-samples=34 --lr-warmup-samples=1 \
                --lr=6.0e-5 --min-lr=6.0e-6 --lr-decay-style=cosine --log-interval=1 --eval-iters=2 \
                --eval-interval=10 --data-path="$tmp/gpt2/my-gpt2_text_document" --vocab-file="$vocab" \
                --merge-file="$merges" --split=98,2,0 --clip-grad=1.0 --weight-decay=0.1 --adam-beta1=0.9 \
                --adam-beta2=0.95 --init-method-std=0.006 --fp16 --recompute-activations --num-threads=1
echo "multi-rank launch lines: all trained"
