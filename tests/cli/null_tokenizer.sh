#!/usr/bin/env bash
# --tokenizer-type NullTokenizer end to end, as Megatron's: text that is
# already token ids is preprocessed (identical .bin/.idx for 1 and 2
# workers, EOD = --vocab-size), trains with the loss falling and Megatron's
# padded-vocab line; the checkpoint records the tokenizer, so `generate`
# needs no tokenizer flags and a resume or `generate` with another
# tokenizer is refused in one line; --mock-data takes the tokenizer too.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Documents of a repeating id pattern a model learns quickly.
awk 'BEGIN { srand(7); for (d = 0; d < 400; d++) { x = int(rand() * 100); n = 5 + int(rand() * 50); s = "";
       for (i = 0; i < n; i++) { x = (x * 7 + 3) % 100; s = s (i ? " " : "") x }; print "{\"text\": \"" s "\"}" } }' \
  > "$tmp/ids.jsonl"
tok=(--tokenizer-type NullTokenizer --vocab-size 100)
"$kiln" preprocess --input "$tmp/ids.jsonl" --output-prefix "$tmp/w1" "${tok[@]}" --append-eod --workers 1 2>/dev/null
"$kiln" preprocess --input "$tmp/ids.jsonl" --output-prefix "$tmp/ids" "${tok[@]}" --append-eod --workers 2 2>/dev/null
cmp "$tmp/w1_text_document.bin" "$tmp/ids_text_document.bin"
cmp "$tmp/w1_text_document.idx" "$tmp/ids_text_document.idx"
# uint16 tokens; the first document ends with EOD = 100.
first_doc_ids=$(head -1 "$tmp/ids.jsonl" | sed 's/.*"text": "\([0-9 ]*\)".*/\1/' | wc -w)
python3 - "$tmp/ids_text_document.bin" "$first_doc_ids" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
n = int(sys.argv[2])
ids = struct.unpack("<%dH" % (n + 1), data[: 2 * (n + 1)])
assert ids[-1] == 100 and max(ids[:-1]) < 100, ids
PY

model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 8
       --split 100,0,0 --eval-iters 0 --log-interval 10 --hidden-dropout 0 --attention-dropout 0 --num-threads 2)
"$kiln" train --data-path "$tmp/ids_text_document" "${tok[@]}" "${model[@]}" --train-iters 40 --save "$tmp/ck" \
  --metrics-file "$tmp/m.jsonl" >"$tmp/train.log"
grep -q '^ > padded vocab (size: 101) with 27 dummy tokens (new size: 128)$' "$tmp/train.log" ||
  { echo "no padded-vocab line:"; head -5 "$tmp/train.log"; exit 1; }
first=$(head -1 "$tmp/m.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
last=$(tail -1 "$tmp/m.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f - 1.0) }' || { echo "loss did not fall: $first -> $last"; exit 1; }
grep -Eq '"tokenizer": ?\{' "$tmp/ck/iter_0000040/meta.json"
grep -Eq '"type": ?"NullTokenizer"' "$tmp/ck/iter_0000040/meta.json"

# generate without tokenizer flags continues the learned pattern in ids.
out=$("$kiln" generate --load "$tmp/ck" --prompt "3 24" --max-new-tokens 6 --temperature 0 2>/dev/null)
echo "$out" | grep -Eq '^3 24( [0-9]+){6}$' || { echo "generate printed: $out"; exit 1; }

expect_error() {
  local pattern=$1; shift
  if "$@" >/dev/null 2>"$tmp/err"; then echo "accepted: $*"; exit 1; fi
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "not one line:"; cat "$tmp/err"; exit 1; }
  grep -Eq "^kiln: error: .*$pattern" "$tmp/err" || { echo "expected /$pattern/:"; cat "$tmp/err"; exit 1; }
}
# Another tokenizer of the same padded size: the model config matches, the tokenizer does not.
expect_error 'was trained with tokenizer NullTokenizer --vocab-size 100 .*but this run.s NullTokenizer has 102 tokens' \
  "$kiln" train --data-path "$tmp/ids_text_document" --tokenizer-type NullTokenizer --vocab-size 101 "${model[@]}" \
  --train-iters 50 --load "$tmp/ck"
expect_error 'was trained with tokenizer NullTokenizer' \
  "$kiln" generate --load "$tmp/ck" --tokenizer-type NullTokenizer --vocab-size 99 --prompt "1"
expect_error '--prompt: NullTokenizer: field 2 "x" is not a token id' "$kiln" generate --load "$tmp/ck" --prompt "1 x"
expect_error 'line 1 of .*ids.jsonl: NullTokenizer: token id [0-9]+ .* is above --vocab-size 10' \
  "$kiln" preprocess --input "$tmp/ids.jsonl" --output-prefix "$tmp/bad" --tokenizer-type NullTokenizer --vocab-size 10
[ ! -e "$tmp/bad_text_document.bin" ] || { echo "a failed preprocess left its output"; exit 1; }
expect_error 'NullTokenizer needs --vocab-size' \
  "$kiln" train --data-path "$tmp/ids_text_document" --tokenizer-type NullTokenizer "${model[@]}" --train-iters 1

# Megatron's mock-data benchmarks: --mock-data with the tokenizer.
"$kiln" train --mock-data "${tok[@]}" "${model[@]}" --train-iters 2 >"$tmp/mock.log" 2>/dev/null
grep -q '^ > padded vocab (size: 101) with 27 dummy tokens (new size: 128)$' "$tmp/mock.log"
echo "null_tokenizer: ok"
