#!/usr/bin/env bash
# swiss-ai/Megatron-LM's Llama-3 8B launcher trains with kiln as written
# (issue 34): submit-llama3-8b.sh at 916e579a (2025-03-17), its TRAINING_CMD
# (the *_ARGS arrays below, in the script's order, then its DATA_ARGS string
# with --data-path and --data-cache-path) on one process.
# Scaled in shape only: --num-layers 2, --hidden-size 64, --ffn-hidden-size 224
# (3.5 x hidden, as 14336 / 4096), --num-attention-heads 8 with --num-query-groups 2
# (4 heads a group, as 32 / 8), SEQ_LEN 64, GBS 4 (MBS 1 as written: 4 micro-batches
# a step), TRAINING_STEPS 20, CHECKPOINT_STEPS 10 and --lr-warmup-iters 8 (the
# script's 250 and 200 of 500); the vocab is the Llama-3-style tokenizer in
# tests/data/tokenizers (a directory where the script names a hub model), and
# DATASETS is a directory of two corpora made here with kiln preprocess from
# kiln's docs. --num-threads 2 added (this machine). The paths follow the
# script's layout under $tmp.
# --main-grads-dtype bf16 (issue 35) is in the line: bf16 main gradients;
# so are the script's document flags (--reset-position-ids
# --reset-attention-mask --eod-mask-loss, docs/DOCUMENTS.md).
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../tools/launch_checks.sh"
tokenizer=$(cd "$(dirname "$0")/../data/tokenizers/llama3_style" && pwd)

# The script's configs and paths.
DATASETS=$tmp/datasets_tokenized/swissai-fineweb-edu-filterrobots-merge
MBS=1 GBS=4 SEQ_LEN=64 TRAINING_STEPS=20 CHECKPOINT_STEPS=10
DATASET_CACHE_DIR=$tmp/datasets/cache
EXP_DIR=$tmp/logs/Meg-Runs/Megatron-Clariden/llama3-8b-1-nodes
CKPT_DIR=$EXP_DIR/checkpoints TRIGGER_DIR=$EXP_DIR/triggers TENSORBOARD_DIR=$EXP_DIR/logging/tensorboard
mkdir -p "$CKPT_DIR" "$TRIGGER_DIR" "$DATASETS/part2"

# Two corpora under DATASETS, one in a subdirectory: the script's data config
# walks the directory for .bin files.
python3 - "$(dirname "$0")/../../docs" "$tmp" <<'PY'
import glob, json, sys
paragraphs = [p for path in sorted(glob.glob(sys.argv[1] + "/*.md"))
              for p in open(path, encoding="utf-8").read().split("\n\n") if p.strip()]
half = len(paragraphs) // 2
for name, part in (("a", paragraphs[:half]), ("b", paragraphs[half:])):
    with open(f"{sys.argv[2]}/{name}.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"text": p}) + "\n" for p in part)
PY
for part in "a:$DATASETS/part1" "b:$DATASETS/part2/part2"; do
  "$kiln" preprocess --input "$tmp/${part%%:*}.jsonl" --output-prefix "${part#*:}" --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model "$tokenizer" --append-eod --workers 2 2>"$tmp/preprocess.err" || { cat "$tmp/preprocess.err"; exit 1; }
done
# What scripts/tools/create_data_config.py -p $DATASETS prints: every .bin
# file under the directory without its extension, space-separated (no weights).
mapfile -t data_prefixes < <(find "$DATASETS" -name '*.bin' | sed 's/\.bin$//' | sort)
[ "${#data_prefixes[@]}" -eq 2 ] || { echo "FAIL: expected 2 corpora, found: ${data_prefixes[*]}"; exit 1; }

TRANSFORMER_ENGINE_ARGS=(--transformer-impl transformer_engine --use-precision-aware-optimizer --main-grads-dtype bf16)
NETWORK_SIZE_ARGS=(--num-layers 2 --hidden-size 64 --ffn-hidden-size 224 --num-attention-heads 8 --group-query-attention
  --num-query-groups 2 --max-position-embeddings "$SEQ_LEN" --position-embedding-type rope --rotary-base 500000
  --use-rope-scaling --rope-scaling-factor 8 --make-vocab-size-divisible-by 128 --normalization RMSNorm --swiglu
  --untie-embeddings-and-output-weights)
LOGGING_ARGS=(--log-throughput --log-progress --tensorboard-dir "$TENSORBOARD_DIR" --no-log-loss-scale-to-tensorboard
  --log-memory-to-tensorboard)
REGULARIZATION_ARGS=(--attention-dropout 0.0 --hidden-dropout 0.0 --weight-decay 0.1 --clip-grad 1.0 --adam-beta1 0.9
  --adam-beta2 0.95)
TRAINING_ARGS=(--micro-batch-size "$MBS" --global-batch-size "$GBS" --no-check-for-nan-in-loss-and-grad
  --train-iters "$TRAINING_STEPS" --log-interval 1 --eval-iters 0 --cross-entropy-loss-fusion --disable-bias-linear
  --optimizer adam --dataloader-type single --manual-gc --manual-gc-interval 500 --exit-signal-handler
  --trigger-path "$TRIGGER_DIR")
INITIALIZATION_ARGS=(--seed 28 --init-method-std 0.008944)
LEARNING_RATE_ARGS=(--lr 0.00022 --min-lr 0.000022 --lr-decay-style cosine --lr-warmup-iters 8)
CHECKPOINTING_ARGS=(--save "$CKPT_DIR" --save-interval "$CHECKPOINT_STEPS" --ckpt-format torch_dist --load "$CKPT_DIR"
  --async-save)
MIXED_PRECISION_ARGS=(--bf16)
DISTRIBUTED_ARGS=(--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --use-distributed-optimizer
  --overlap-grad-reduce --overlap-param-gather)
TOKENIZER_ARGS=(--tokenizer-type HuggingFaceTokenizer --tokenizer-model "$tokenizer")
DATA_ARGS=(--split "100,0,0" --seq-length "$SEQ_LEN" --reset-position-ids --reset-attention-mask --eod-mask-loss
  --num-workers 1 --num-dataset-builder-threads 1 --data-path "${data_prefixes[@]}" --data-cache-path "$DATASET_CACHE_DIR")
line=("${TRANSFORMER_ENGINE_ARGS[@]}" "${NETWORK_SIZE_ARGS[@]}" "${LOGGING_ARGS[@]}" "${REGULARIZATION_ARGS[@]}"
      "${TRAINING_ARGS[@]}" "${INITIALIZATION_ARGS[@]}" "${LEARNING_RATE_ARGS[@]}" "${CHECKPOINTING_ARGS[@]}"
      "${MIXED_PRECISION_ARGS[@]}" "${DISTRIBUTED_ARGS[@]}" "${TOKENIZER_ARGS[@]}" "${DATA_ARGS[@]}" --num-threads 2)

# The script's launch: clean triggers, then the line.
rm -f "$TRIGGER_DIR/save" "$TRIGGER_DIR/exit"
trains llama3_8b "$kiln" train "${line[@]}"
[ "$(grep -c '] iteration ' "$tmp/llama3_8b.log")" -eq 20 ] || { cat "$tmp/llama3_8b.log"; echo "FAIL: not 20 steps"; exit 1; }
# Under the flags' meaning: the Llama-3 shape, the vocab padded to a multiple
# of 128, GBS from 4 micro-batches, the warmup's peak at its 8th step, the
# throughput column, both corpora and the cache directory, a save every
# CHECKPOINT_STEPS, TensorBoard events, and the finished run's exit trigger.
logged llama3_8b "model: 2 layers, hidden 64, 8 heads, seq 64, vocab 1792"
logged llama3_8b " > padded vocab (size: 1764) with 28 dummy tokens (new size: 1792)"
logged llama3_8b "data: Megatron GPT dataset ${data_prefixes[0]} ${data_prefixes[1]} (split 100,0,0, seed 28:"
logged llama3_8b "documents (EOD id "
logged llama3_8b "global batch size:     4 |"
logged llama3_8b "throughput per GPU (TFLOP/s/GPU):"
grep -q '] iteration        9/      20 |.* learning rate: 2.200000E-04 |' "$tmp/llama3_8b.log" ||
  { cat "$tmp/llama3_8b.log"; echo "FAIL: the warmup did not reach --lr at its 8th step"; exit 1; }
logged llama3_8b "saved checkpoint at iteration 10 to $CKPT_DIR"
logged llama3_8b "saved checkpoint at iteration 20 to $CKPT_DIR"
logged llama3_8b "Training finished after 20 iterations; Canceling pending scheduled jobs."
[ -e "$TRIGGER_DIR/exit" ] || { echo "FAIL: no $TRIGGER_DIR/exit after the last step"; exit 1; }
compgen -G "$TENSORBOARD_DIR/events.out.tfevents.*" >/dev/null || { echo "FAIL: no TensorBoard events"; exit 1; }
compgen -G "$DATASET_CACHE_DIR/*-GPTDataset-train.kidx" >/dev/null ||
  { ls -R "$tmp/datasets"; echo "FAIL: no index cache under --data-cache-path"; exit 1; }

# The script run again (AUTO_JOB_REQUEUE's next job): it cleans the triggers,
# resumes from --load at the last step and, with nothing left, exits 0 and
# sets the exit trigger again, so the requeuing stops.
rm -f "$TRIGGER_DIR/save" "$TRIGGER_DIR/exit"
"$kiln" train "${line[@]}" >"$tmp/requeued.log" 2>&1 || { cat "$tmp/requeued.log"; echo "FAIL: the requeued job"; exit 1; }
logged requeued "resumed from $CKPT_DIR/iter_0000020 at iteration 20 (80 consumed samples)"
if grep -q '] iteration ' "$tmp/requeued.log"; then cat "$tmp/requeued.log"; echo "FAIL: trained past 20"; exit 1; fi
[ -e "$TRIGGER_DIR/exit" ] || { echo "FAIL: the requeued job set no exit trigger"; exit 1; }
echo "swiss-ai Llama-3 8B launch line: trained"
