#!/usr/bin/env bash
# The two model families of issue 15 learn real text: tiny Shakespeare,
# preprocessed by kiln preprocess with GPT-2's BPE, trains a Llama-style
# model (RoPE, RMSNorm, SwiGLU, GQA with 2 groups, untied, no biases) and an
# MPT-style one (ALiBi, no biases, QK-LayerNorm, QKV clipping) with the loss
# falling from ln(50304) = 10.8 by more than 1.0. Skipped without ../shared.
set -euo pipefail
kiln=$1
shared=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
if [ ! -f "$shared/gpt2/gpt2-vocab.json" ] || [ ! -f "$shared/corpus/tinyshakespeare.txt" ]; then
  echo "SKIPPED: needs $shared/gpt2 and $shared/corpus/tinyshakespeare.txt (../shared beside the project)"
  exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tok=(--tokenizer-type GPT2BPETokenizer --vocab-file "$shared/gpt2/gpt2-vocab.json" --merge-file "$shared/gpt2/gpt2-merges.txt")

# One JSON document per paragraph (awk's paragraph mode; the corpus is ASCII).
awk 'BEGIN { RS = "" } { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\n/, "\\n"); print "{\"text\": \"" $0 "\"}" }' \
  "$shared/corpus/tinyshakespeare.txt" > "$tmp/ts.jsonl"
"$kiln" preprocess --input "$tmp/ts.jsonl" --output-prefix "$tmp/ts" "${tok[@]}" --append-eod --workers 2 2> "$tmp/pre.log"

common=(--data-path "$tmp/ts_text_document" "${tok[@]}" --split 949,50,1
        --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 4
        --global-batch-size 8 --lr 5e-3 --lr-warmup-iters 2 --log-interval 1 --num-threads 2
        --train-iters 24 --eval-interval 24 --eval-iters 2)
llama=(--position-embedding-type rope --normalization RMSNorm --swiglu --group-query-attention --num-query-groups 2
       --untie-embeddings-and-output-weights --disable-bias-linear)
mpt=(--position-embedding-type alibi --disable-bias-linear --qk-layernorm --clip-qkv 6)
loss() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }

for name in llama mpt; do
  declare -n flags=$name
  "$kiln" train "${common[@]}" "${flags[@]}" --metrics-file "$tmp/$name.jsonl" > "$tmp/$name.log" 2>&1 ||
    { echo "$name: kiln train failed:"; tail -5 "$tmp/$name.log"; exit 1; }
  grep -q 'validation loss at iteration 24' "$tmp/$name.log"
  # Means of the first and last 3 steps, so one noisy batch decides nothing.
  first=$(loss "$tmp/$name.jsonl" | head -3 | awk '{ s += $1 } END { print s / NR }')
  last=$(loss "$tmp/$name.jsonl" | tail -3 | awk '{ s += $1 } END { print s / NR }')
  echo "$name: loss $first -> $last over 24 steps"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(a > 10.0 && b < a - 1.0) }' ||
    { echo "$name: the loss did not fall by more than 1.0"; exit 1; }
done
