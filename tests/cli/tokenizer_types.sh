#!/usr/bin/env bash
# Every --tokenizer-type with files in tests/data/tokenizers end to end, as a
# Megatron user runs them: `kiln preprocess` (identical .bin/.idx for 1 and
# 2 workers), `kiln train` on the result with the loss falling and Megatron's
# padded-vocab line, a checkpoint that records the tokenizer, `kiln generate`
# with no tokenizer flags, `kiln export` with the tokenizer files, and a
# resume with another tokenizer refused.
# The corpus is kiln's own docs/ (English prose, always present).
set -euo pipefail
kiln=$1
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../data/tokenizers" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# One JSON document per paragraph of the docs.
python3 "$here/../tools/docs_jsonl.py" >"$tmp/docs.jsonl"

model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --micro-batch-size 8
       --split 98,2,0 --eval-iters 0 --log-interval 1 --lr 5e-3 --lr-warmup-iters 5 --hidden-dropout 0
       --attention-dropout 0 --num-threads 2)
loss() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }

run_type() {  # $1: name, $2: expected vocab line, rest: tokenizer flags
  local name=$1 vocab_line=$2; shift 2
  "$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/${name}_w1" "$@" --append-eod --workers 1 2>/dev/null
  "$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/$name" "$@" --append-eod --workers 2 2>/dev/null
  cmp "$tmp/${name}_w1_text_document.bin" "$tmp/${name}_text_document.bin"
  cmp "$tmp/${name}_w1_text_document.idx" "$tmp/${name}_text_document.idx"
  "$kiln" train --data-path "$tmp/${name}_text_document" "$@" "${model[@]}" --train-iters 60 --save "$tmp/${name}_ck" \
    --metrics-file "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1
  grep -q "^ > padded vocab $vocab_line\$" "$tmp/$name.log" || { echo "$name: no padded-vocab line"; cat "$tmp/$name.log"; exit 1; }
  local first last
  first=$(loss "$tmp/$name.jsonl" | head -3 | awk '{ s += $1 } END { print s / NR }')
  last=$(loss "$tmp/$name.jsonl" | tail -3 | awk '{ s += $1 } END { print s / NR }')
  awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f - 1.0) }' || { echo "$name: loss $first -> $last"; exit 1; }
  echo "$name: loss $first -> $last"
  grep -Eq "\"type\": ?\"$name\"" "$tmp/${name}_ck/iter_0000060/meta.json"
  "$kiln" generate --load "$tmp/${name}_ck" --prompt "The model" --max-new-tokens 16 --seed 1 >"$tmp/$name.gen" 2>"$tmp/err" ||
    { cat "$tmp/err"; exit 1; }
  grep -q '^The model' "$tmp/$name.gen"
  [ "$(wc -c <"$tmp/$name.gen")" -gt 14 ] || { echo "$name: generate printed too little"; cat "$tmp/$name.gen"; exit 1; }
}

# HuggingFaceTokenizer (a Llama-3-style tokenizer.json with its config; BOS
# from the template): 1756 BPE ids and 8 added tokens, padded to 1792.
run_type HuggingFaceTokenizer '(size: 1764) with 28 dummy tokens (new size: 1792)' \
  --tokenizer-type HuggingFaceTokenizer --tokenizer-model "$data/llama3_style"
"$kiln" export --load "$tmp/HuggingFaceTokenizer_ck" --format hf --output "$tmp/hf_llama3" >/dev/null
cmp "$data/llama3_style/tokenizer.json" "$tmp/hf_llama3/tokenizer.json"
cmp "$data/llama3_style/tokenizer_config.json" "$tmp/hf_llama3/tokenizer_config.json"
# The exported copy is the same tokenizer: generate accepts it for the checkpoint.
"$kiln" generate --load "$tmp/HuggingFaceTokenizer_ck" --tokenizer-type HuggingFaceTokenizer \
  --tokenizer-model "$tmp/hf_llama3" --prompt "The" --max-new-tokens 2 >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }

sp=(--tokenizer-model "$data/sp_bpe_identity.model")
run_type Llama2Tokenizer '(size: 2000) with 48 dummy tokens (new size: 2048)' --tokenizer-type Llama2Tokenizer "${sp[@]}"
run_type GPTSentencePieceTokenizer '(size: 2000) with 48 dummy tokens (new size: 2048)' \
  --tokenizer-type GPTSentencePieceTokenizer "${sp[@]}"
# Llama2Tokenizer starts every document with BOS (id 1 in this model).
python3 - "$tmp/Llama2Tokenizer_text_document" <<'PY'
import struct, sys
idx = open(sys.argv[1] + ".idx", "rb").read()
n = struct.unpack("<Q", idx[18:26])[0]
sizes = struct.unpack("<%di" % n, idx[34:34 + 4 * n])
pointers = struct.unpack("<%dq" % n, idx[34 + 4 * n:34 + 12 * n])
bin_ = open(sys.argv[1] + ".bin", "rb").read()
for size, ptr in zip(sizes[:50], pointers[:50]):
    ids = struct.unpack("<%dH" % size, bin_[ptr:ptr + 2 * size])
    assert ids[0] == 1 and ids[-1] == 2, ids[:3] + ids[-3:]  # BOS ... EOD (= EOS)
PY

# kiln export carries the recorded tokenizer into the HF directory, byte for
# byte, with a tokenizer_config.json saying how to use it; a tokenizer file
# that changed since the training run is refused unless --skip-tokenizer.
"$kiln" export --load "$tmp/Llama2Tokenizer_ck" --format hf --output "$tmp/hf" >/dev/null
cmp "$data/sp_bpe_identity.model" "$tmp/hf/tokenizer.model"
grep -q '"tokenizer_class": "LlamaTokenizer"' "$tmp/hf/tokenizer_config.json"
grep -q '"add_bos_token": true' "$tmp/hf/tokenizer_config.json"
cp "$data/sp_bpe_identity.model" "$tmp/moved.model"
sed -i "s|$data/sp_bpe_identity.model|$tmp/moved.model|" "$tmp/GPTSentencePieceTokenizer_ck/iter_0000060/meta.json"
"$kiln" export --load "$tmp/GPTSentencePieceTokenizer_ck" --format hf --output "$tmp/hf_gpt_sp" >/dev/null
grep -q '"add_bos_token": false' "$tmp/hf_gpt_sp/tokenizer_config.json"
printf 'x' >>"$tmp/moved.model"
if "$kiln" export --load "$tmp/GPTSentencePieceTokenizer_ck" --format hf --output "$tmp/hf2" >/dev/null 2>"$tmp/err"; then
  echo "an export with a changed tokenizer file was accepted"; exit 1
fi
grep -q 'cannot be exported: .*pass --skip-tokenizer to export the model alone' "$tmp/err" || { cat "$tmp/err"; exit 1; }
[ ! -e "$tmp/hf2" ] || { echo "a refused export left $tmp/hf2"; exit 1; }
"$kiln" export --load "$tmp/GPTSentencePieceTokenizer_ck" --format hf --output "$tmp/hf2" --skip-tokenizer >/dev/null
[ ! -e "$tmp/hf2/tokenizer.model" ]

# The same-sized vocab of the other type: the model config matches, the tokenizer does not.
if "$kiln" train --data-path "$tmp/Llama2Tokenizer_text_document" --tokenizer-type GPTSentencePieceTokenizer "${sp[@]}" \
     "${model[@]}" --train-iters 70 --load "$tmp/Llama2Tokenizer_ck" >/dev/null 2>"$tmp/err"; then
  echo "a resume with another tokenizer was accepted"; exit 1
fi
grep -q 'was trained with tokenizer Llama2Tokenizer .*but this run.s GPTSentencePieceTokenizer' "$tmp/err" ||
  { cat "$tmp/err"; exit 1; }
echo "tokenizer_types: ok"
