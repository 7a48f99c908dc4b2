#!/usr/bin/env bash
# kiln preprocess on bad input: each case exits 1 with one clear
# "kiln: error:" line, and nothing (not even a temporary) is left behind.
# Skipped without ../shared (the GPT-2 vocab).
set -euo pipefail
kiln=$1
shared=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
if [ ! -f "$shared/gpt2/gpt2-vocab.json" ]; then
  echo "SKIPPED: needs $shared/gpt2 (../shared beside the project)"
  exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
vocab=$shared/gpt2/gpt2-vocab.json merges=$shared/gpt2/gpt2-merges.txt

# expect_error NAME 'message regex' ARGS...: fails unless kiln exits 1 with that message and leaves no files.
expect_error() {
  local name=$1 pattern=$2; shift 2
  mkdir -p "$tmp/out"
  local status=0
  "$kiln" preprocess "$@" --output-prefix "$tmp/out/o" > "$tmp/stdout" 2> "$tmp/stderr" || status=$?
  if [ "$status" -ne 1 ] || ! grep -Eq "^kiln: error: .*$pattern" "$tmp/stderr"; then
    echo "$name: expected exit 1 and /$pattern/, got exit $status:"; cat "$tmp/stderr"; exit 1
  fi
  if [ -n "$(ls -A "$tmp/out")" ]; then echo "$name: left files behind:"; ls -A "$tmp/out"; exit 1; fi
  echo "$name: $(grep '^kiln: error' "$tmp/stderr")"
}
tok=(--tokenizer-type GPT2BPETokenizer --vocab-file "$vocab" --merge-file "$merges")

printf '{"text": "good"}\n{"text": "broken"\n{"text": "fine"}\n' > "$tmp/malformed.jsonl"
expect_error malformed 'line 2 of .* is not valid JSON.*--skip-bad-lines' --input "$tmp/malformed.jsonl" "${tok[@]}"

# --skip-bad-lines counts and skips it.
"$kiln" preprocess --input "$tmp/malformed.jsonl" "${tok[@]}" --output-prefix "$tmp/skip" --skip-bad-lines 2> "$tmp/skip.log"
grep -q '^warning: skipping line 2 of ' "$tmp/skip.log"
grep -q 'Done: 2 documents, .* 1 bad lines skipped' "$tmp/skip.log" || { cat "$tmp/skip.log"; exit 1; }
test -s "$tmp/skip_text_document.idx"

printf '{"text": "a"}\n{"body": "b", "id": 7}\n' > "$tmp/nokey.jsonl"
# A number no double holds is an unreadable line too, not a crash.
printf '{"text": "ok"}\n{"text": 1e999}\n' > "$tmp/overflow.jsonl"
expect_error number-overflow "line 2 of .* is not valid JSON \\(number overflow parsing '1e999'\\)" \
  --input "$tmp/overflow.jsonl" "${tok[@]}"
expect_error missing-key "line 2 of .* has no key 'text' \(it has 'body', 'id'\)" --input "$tmp/nokey.jsonl" "${tok[@]}"
expect_error missing-key-json-keys "line 1 of .* has no key 'content'" --input "$tmp/nokey.jsonl" "${tok[@]}" --json-keys content

printf '{"text": "ok"}\n{"text": "bad \xff byte"}\n' > "$tmp/utf8.jsonl"
expect_error invalid-utf8 'line 2 of .* is not valid UTF-8' --input "$tmp/utf8.jsonl" "${tok[@]}"

printf '{"text": 12}\n' > "$tmp/type.jsonl"
expect_error not-a-string "line 1 of .* has 'text' as a JSON number" --input "$tmp/type.jsonl" "${tok[@]}"

# Merges from another vocabulary.
{ head -1 "$merges"; echo "Ġ qzxqzxqzx"; } > "$tmp/other-merges.txt"
expect_error vocab-merges-mismatch 'do not belong together' --input "$tmp/nokey.jsonl" --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$vocab" --merge-file "$tmp/other-merges.txt"
echo '{"a": 0' > "$tmp/bad-vocab.json"
expect_error bad-vocab 'not valid JSON' --input "$tmp/nokey.jsonl" --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$tmp/bad-vocab.json" --merge-file "$merges"

expect_error no-input 'cannot open --input' --input "$tmp/missing.jsonl" "${tok[@]}"
expect_error no-vocab 'needs --vocab-file' --input "$tmp/nokey.jsonl" --tokenizer-type GPT2BPETokenizer
expect_error other-tokenizer 'BertWordPieceLowerCase is not supported' --input "$tmp/nokey.jsonl" --tokenizer-type BertWordPieceLowerCase
expect_error no-model 'SentencePieceTokenizer needs --tokenizer-model' --input "$tmp/nokey.jsonl" --tokenizer-type SentencePieceTokenizer

# A 10 MB line that is not JSON: the error quotes a bounded part of it
# (issue 13 item 20: the "one-line" error used to be 10 MB long).
python3 -c "import sys; sys.stdout.write('{\"text\": \"' + 'a' * 10000000 + '\n')" > "$tmp/huge.jsonl"
expect_error huge-line 'not valid JSON.*bytes in all' --input "$tmp/huge.jsonl" "${tok[@]}"
[ "$(wc -c < "$tmp/stderr")" -lt 1000 ] || { echo "huge-line: a $(wc -c < "$tmp/stderr")-byte error"; exit 1; }
echo "preprocess_bad_input: ok"
