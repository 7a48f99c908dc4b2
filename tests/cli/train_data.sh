#!/usr/bin/env bash
# kiln preprocess + kiln train on tiny Shakespeare with GPT-2 BPE: the
# .bin/.idx are identical for 1 and 2 workers, the loss falls, a resumed run
# continues with exactly the same samples (bitwise-equal losses), benchmark
# mode (--split 100,0,0 --eval-iters 0) runs, `generate` finds the
# tokenizer the checkpoint records, an empty eval split with --eval-iters > 0
# trains without evaluation (as Megatron), and --train-samples builds its
# dataset. Skipped without ../shared.
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

"$kiln" preprocess --input "$tmp/ts.jsonl" --output-prefix "$tmp/w1" "${tok[@]}" --append-eod --workers 1 2> "$tmp/w1.log"
"$kiln" preprocess --input "$tmp/ts.jsonl" --output-prefix "$tmp/ts" "${tok[@]}" --append-eod --workers 2 \
  --log-interval 2000 2> "$tmp/w2.log"
cmp "$tmp/w1_text_document.bin" "$tmp/ts_text_document.bin"
cmp "$tmp/w1_text_document.idx" "$tmp/ts_text_document.idx"
grep -q '^Processed 2000 documents (.* docs/s, .* MB/s)\.$' "$tmp/w2.log" || { cat "$tmp/w2.log"; exit 1; }
grep -q '^Done: ' "$tmp/w2.log"

data=(--data-path "$tmp/ts_text_document" "${tok[@]}" --split 949,50,1)
model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 4
       --global-batch-size 8 --lr 5e-3 --lr-warmup-iters 2 --log-interval 1 --num-threads 2)
loss() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }

# Loss falls over 24 steps (from ln(50304) = 10.8), and validation runs.
"$kiln" train "${data[@]}" "${model[@]}" --train-iters 24 --eval-interval 24 --eval-iters 2 \
  --metrics-file "$tmp/fall.jsonl" > "$tmp/fall.log" 2>&1
grep -q 'validation loss at iteration 24' "$tmp/fall.log"
first=$(loss "$tmp/fall.jsonl" | head -3 | awk '{ s += $1 } END { print s / NR }')
last=$(loss "$tmp/fall.jsonl" | tail -3 | awk '{ s += $1 } END { print s / NR }')
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1.0) }' || { echo "loss did not fall: $first -> $last"; exit 1; }
echo "loss $first -> $last"
ls "$tmp"/cache/GPTDataset_indices/*-GPTDataset-train.kidx > /dev/null  # index cache beside the data

# Exact resume: save at 6, resume to 12, compare with an uninterrupted run.
common=("${data[@]}" "${model[@]}" --train-iters 12 --eval-iters 0)
"$kiln" train "${common[@]}" --metrics-file "$tmp/full.jsonl" > /dev/null 2>&1
"$kiln" train "${common[@]}" --save "$tmp/ck" --save-interval 6 > /dev/null 2>&1
echo 6 > "$tmp/ck/latest_checkpointed_iteration.txt"
"$kiln" train "${common[@]}" --load "$tmp/ck" --metrics-file "$tmp/resumed.jsonl" > "$tmp/resumed.log" 2>&1
grep -q 'resumed from .* at iteration 6 (48 consumed samples)' "$tmp/resumed.log"
pick() { grep -o '"grad_norm":[^,]*\|"iteration":[0-9]*\|"lm_loss":[^,]*' "$1" | paste -d' ' - - - ; }
full=$(pick "$tmp/full.jsonl" | awk '$2 ~ /"iteration":([7-9]|1[0-2])$/')
resumed=$(pick "$tmp/resumed.jsonl")
[ -n "$full" ] && [ "$full" = "$resumed" ] || { echo "resumed run diverged:"; diff <(echo "$full") <(echo "$resumed"); exit 1; }
echo "resume exact over $(echo "$resumed" | wc -l) steps"

# generate finds the tokenizer the checkpoint records: GPT-2 text out, no tokenizer flags.
"$kiln" generate --load "$tmp/ck" --prompt "ROMEO:" --max-new-tokens 8 --seed 3 > "$tmp/gen.txt" 2> "$tmp/gen.err" ||
  { cat "$tmp/gen.err"; exit 1; }
grep -q '^ROMEO:' "$tmp/gen.txt"
[ "$(wc -c < "$tmp/gen.txt")" -gt 12 ] || { echo "generate printed too little:"; cat "$tmp/gen.txt"; exit 1; }
# ... and kiln export writes GPT-2's tokenizer files beside the weights.
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >/dev/null
cmp "$shared/gpt2/gpt2-vocab.json" "$tmp/hf/vocab.json"
cmp "$shared/gpt2/gpt2-merges.txt" "$tmp/hf/merges.txt"
grep -q '"tokenizer_class": "GPT2Tokenizer"' "$tmp/hf/tokenizer_config.json"

# Benchmark mode, and an empty eval split with --eval-iters > 0: as Megatron,
# no validation dataset and no evaluation, one line saying so, no error.
"$kiln" train --data-path "$tmp/ts_text_document" "${tok[@]}" --split 100,0,0 --eval-iters 0 "${model[@]}" \
  --train-iters 3 > /dev/null 2>&1
"$kiln" train --data-path "$tmp/ts_text_document" "${tok[@]}" --split 100,0,0 --eval-iters 2 --eval-interval 1 \
  "${model[@]}" --train-iters 3 > "$tmp/noval.log" 2>&1 || { cat "$tmp/noval.log"; exit 1; }
grep -q 'validation is off: --split 100,0,0 gives it no documents' "$tmp/noval.log" || { cat "$tmp/noval.log"; exit 1; }
grep -q 'iteration        3/' "$tmp/noval.log" || { echo "no iteration 3:"; cat "$tmp/noval.log"; exit 1; }
if grep -q 'validation loss' "$tmp/noval.log"; then echo "evaluated an empty validation split"; exit 1; fi

# Sample-based training: the train split is built for --train-samples.
"$kiln" train "${data[@]}" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 \
  --micro-batch-size 2 --global-batch-size 2 --train-samples 7 --lr-warmup-samples 2 --eval-iters 0 --num-threads 2 \
  > "$tmp/samples.log" 2>&1 || { cat "$tmp/samples.log"; exit 1; }
grep -q 'iteration        3/       3' "$tmp/samples.log" || { cat "$tmp/samples.log"; exit 1; }

# A weighted blend of two prefixes trains and evaluates.
"$kiln" train --data-path 0.7 "$tmp/ts_text_document" 0.3 "$tmp/w1_text_document" "${tok[@]}" "${model[@]}" \
  --train-iters 3 --eval-interval 3 --eval-iters 1 > "$tmp/blend.log" 2>&1
grep -q 'data: Megatron GPT dataset 0.7 .*ts_text_document 0.3 .*w1_text_document' "$tmp/blend.log"
grep -q 'validation loss at iteration 3' "$tmp/blend.log"

# Data flag errors: one clear line each.
train_error() {
  local pattern=$1; shift
  if "$kiln" train "$@" "${model[@]}" --train-iters 3 > /dev/null 2> "$tmp/err"; then echo "accepted: $*"; exit 1; fi
  grep -Eq "^kiln: error: .*$pattern" "$tmp/err" || { echo "expected /$pattern/:"; cat "$tmp/err"; exit 1; }
}
train_error 'needs --tokenizer-type \(GPT2BPETokenizer' --data-path "$tmp/ts_text_document"
train_error 'needs --vocab-file' --data-path "$tmp/ts_text_document" --tokenizer-type GPT2BPETokenizer
train_error 'ts_nope.idx does not exist' --data-path "$tmp/ts_nope" "${tok[@]}"
train_error 'mixes weighted and unweighted' --data-path 0.5 "$tmp/ts_text_document" "$tmp/ts_text_document" 0.5 "${tok[@]}"
train_error 'only apply with --data-path' "${tok[@]}"
# --vocab-size beside a tokenizer with its own vocabulary: Megatron ignores it; kiln says so.
"$kiln" train "${data[@]}" "${model[@]}" --train-iters 3 --vocab-size 1000 >/dev/null 2>"$tmp/err" ||
  { cat "$tmp/err"; exit 1; }
grep -q "warning\] --vocab-size 1000 ignored: the vocabulary is --tokenizer-type GPT2BPETokenizer's 50257 ids" \
  "$tmp/err" || { echo "no --vocab-size warning:"; cat "$tmp/err"; exit 1; }
echo "train_data: ok"
