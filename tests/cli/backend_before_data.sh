#!/usr/bin/env bash
# --backend and --device are resolved before any data work: a typo in either
# is a one-line error, and the dataset's index cache stays empty (the same
# flags with a valid backend do build it, so the check is not vacuous).
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0

# A GPT-2-style vocabulary of the 256 byte tokens (bytes_to_unicode spelling)
# plus one merge ("h e") and <|endoftext|>: enough to preprocess a small corpus.
python3 - "$tmp" <<'PY'
import json, sys
printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
vocab, extra = {}, 0
for b in range(256):
    cp = b if b in printable else 256 + extra
    extra += b not in printable
    vocab[chr(cp)] = b
vocab["he"] = 256
vocab["<|endoftext|>"] = 257
open(sys.argv[1] + "/vocab.json", "w").write(json.dumps(vocab))
open(sys.argv[1] + "/merges.txt", "w").write("#version: 0.2\nh e\n")
with open(sys.argv[1] + "/docs.jsonl", "w") as f:
    for i in range(200):
        f.write(json.dumps({"text": "document %d says hello to the index builder" % i}) + "\n")
PY
tok=(--tokenizer-type GPT2BPETokenizer --vocab-file "$tmp/vocab.json" --merge-file "$tmp/merges.txt")
"$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/d" "${tok[@]}" --append-eod --workers 1 \
  2>"$tmp/pre.log" || { cat "$tmp/pre.log"; exit 1; }
data=(--data-path "$tmp/d_text_document" "${tok[@]}" --split 100,0,0 --eval-iters 0)
model=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8 --micro-batch-size 2
       --global-batch-size 2 --train-iters 1 --num-threads 1)

expect_error() {
  local want=$1; shift
  rm -rf "$tmp/idx"; mkdir "$tmp/idx"
  local start=$(date +%s%N)
  "$kiln" train "${data[@]}" "${model[@]}" --data-cache-path "$tmp/idx" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  local lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$tmp/err"; then
    echo "FAIL: kiln train $* -> rc=$rc, stderr ($lines lines):"; cat "$tmp/err"; fails=$((fails+1))
  elif [ -n "$(ls -A "$tmp/idx")" ]; then
    echo "FAIL: kiln train $* built dataset indices before the error:"; ls -R "$tmp/idx"; fails=$((fails+1))
  else
    echo "ok (${ms} ms, index cache empty): $(cat "$tmp/err")"
  fi
}
expect_error "no backend 'nosuch'" --backend nosuch
expect_error "cpu: no device 7" --backend cpu --device 7

# The control: the same data flags with a valid backend build the index.
rm -rf "$tmp/idx"; mkdir "$tmp/idx"
if ! "$kiln" train "${data[@]}" "${model[@]}" --data-cache-path "$tmp/idx" --backend cpu >"$tmp/ok.log" 2>&1; then
  echo "FAIL: the control run failed:"; cat "$tmp/ok.log"; fails=$((fails+1))
elif [ -z "$(find "$tmp/idx" -name '*.kidx')" ]; then
  echo "FAIL: the control run built no index under $tmp/idx (the check above would be vacuous)"; fails=$((fails+1))
else
  echo "ok: with --backend cpu the index cache is built"
fi
exit $fails
