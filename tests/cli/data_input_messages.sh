#!/usr/bin/env bash
# Data inputs that were blamed on the wrong thing (issue 36):
# - D3b: a --json-keys value that is a list with a non-string element was
#   reported as "a JSON array, not a string", though lists of strings are
#   accepted: the element is named;
# - D17c: --data-path weights whose sum overflows a double (1e308 P 1e308 P)
#   normalised to 0 and were reported as "the unweighted --data-path blend
#   has 0 train samples": the weights are named;
# - D15b: a token id outside the model's vocabulary named no file, document
#   or sample: now the .bin, the sequence, the token and the sample.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
expect_error() {
  local want=$1; shift
  "$kiln" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
  local lines=$(wc -l <"$tmp/err.lines")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err.lines"; then
    echo "FAIL: kiln $* -> rc=$rc, want '$want', stderr ($lines lines):"; cat "$tmp/err"; fails=$((fails+1))
  else
    echo "ok: $(cat "$tmp/err.lines")"
  fi
}
tok=(--tokenizer-type NullTokenizer --vocab-size 100)
printf '{"text": ["1 2", 5]}\n' > "$tmp/d3b.jsonl"
expect_error "line 1 of $tmp/d3b.jsonl has 'text' as a JSON array whose element 2 is a JSON number, not a string" \
  preprocess "${tok[@]}" --input "$tmp/d3b.jsonl" --output-prefix "$tmp/d3b"
# A list of strings is still accepted.
printf '{"text": ["1 2", "3 4"]}\n' > "$tmp/list.jsonl"
"$kiln" preprocess "${tok[@]}" --input "$tmp/list.jsonl" --output-prefix "$tmp/list" >"$tmp/out" 2>&1 ||
  { echo "FAIL: a list of strings is refused:"; cat "$tmp/out"; fails=$((fails+1)); }

awk 'BEGIN { for (d = 0; d < 200; d++) { s = ""; for (i = 0; i < 40; i++) s = s (i ? " " : "") (d + i) % 100;
       print "{\"text\": \"" s "\"}" } }' > "$tmp/ids.jsonl"
"$kiln" preprocess "${tok[@]}" --input "$tmp/ids.jsonl" --output-prefix "$tmp/ids" --append-eod >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; echo "FAIL: preprocess"; exit 1; }
p=$tmp/ids_text_document
expect_error "--data-path weights add up to more than a double holds; give relative weights such as 0.5 0.5" \
  train "${tok[@]}" --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 \
  --train-iters 2 --log-interval 1 --eval-interval 100 --eval-iters 0 --data-path 1e308 "$p" 1e308 "$p"
# D15b: data made with a 1000-token vocabulary, one id of 900 in sequence 7,
# trained with a 100-token one (padded to 128); two epochs, so every
# sequence is drawn and the bad one certainly is.
awk 'BEGIN { for (d = 0; d < 20; d++) { s = ""; for (i = 0; i < 16; i++) s = s (i ? " " : "") (d == 7 && i == 5 ? 900 : i);
       print "{\"text\": \"" s "\"}" } }' > "$tmp/oov.jsonl"
"$kiln" preprocess --tokenizer-type NullTokenizer --vocab-size 1000 --input "$tmp/oov.jsonl" --output-prefix "$tmp/oov" \
  >"$tmp/out" 2>&1 || { cat "$tmp/out"; echo "FAIL: preprocess oov"; exit 1; }
expect_error "token id 900 in sequence 7 (token 5) of $tmp/oov_text_document.bin (train sample " \
  train "${tok[@]}" --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 15 --micro-batch-size 1 \
  --global-batch-size 1 --train-iters 40 --log-interval 100 --eval-iters 0 --split 100,0,0 \
  --data-path "$tmp/oov_text_document"
exit $fails
