#!/usr/bin/env bash
# kiln preprocess reads .jsonl.gz as Python's gzip (Megatron's
# preprocess_data.py) does (issue 13, item 7): every member of a
# multi-member file (cat a.gz b.gz, pigz) counts, zero padding after the
# last one is allowed, and plain text appended to a .gz is refused in one
# line instead of silently dropped. Python's gzip module is the reference.
# Skipped without ../shared (the GPT-2 vocab).
set -uo pipefail
kiln=$1
shared=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
if [ ! -f "$shared/gpt2/gpt2-vocab.json" ]; then
  echo "SKIPPED: needs $shared/gpt2 (../shared beside the project)"
  exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
tok=(--tokenizer-type GPT2BPETokenizer --vocab-file "$shared/gpt2/gpt2-vocab.json" --merge-file "$shared/gpt2/gpt2-merges.txt")
docs() { python3 -c "
import struct, sys
with open(sys.argv[1], 'rb') as f:
    f.read(9 + 8 + 1); (n_seq,) = struct.unpack('<Q', f.read(8)); (n_doc,) = struct.unpack('<Q', f.read(8))
print(n_doc - 1)" "$1"; }
python_docs() { python3 -c "
import gzip, sys
print(sum(1 for line in gzip.open(sys.argv[1], 'rt', encoding='utf-8') if line.strip()))" "$1"; }

for i in 1 2 3; do
  for j in $(seq 40); do printf '{"text": "member %d document %d"}\n' "$i" "$j"; done > "$tmp/part$i.jsonl"
  gzip -c "$tmp/part$i.jsonl" > "$tmp/part$i.jsonl.gz"
done
cat "$tmp/part1.jsonl.gz" "$tmp/part2.jsonl.gz" "$tmp/part3.jsonl.gz" > "$tmp/multi.jsonl.gz"
head -c 1024 /dev/zero >> "$tmp/multi.jsonl.gz"  # tape padding, which Python's gzip accepts
want=$(python_docs "$tmp/multi.jsonl.gz")
[ "$want" = 120 ] || fail "python counts $want documents"
"$kiln" preprocess --input "$tmp/multi.jsonl.gz" --output-prefix "$tmp/multi" "${tok[@]}" >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "multi-member input refused"; }
got=$(docs "$tmp/multi_text_document.idx")
[ "$got" = "$want" ] || fail "kiln read $got documents of the multi-member file, python $want"
echo "ok: 3 gzip members and zero padding: $got documents, as python's gzip"

cat "$tmp/part1.jsonl.gz" "$tmp/part2.jsonl" > "$tmp/mixed.jsonl.gz"
if python3 -c "import gzip,sys; sum(1 for _ in gzip.open(sys.argv[1]))" "$tmp/mixed.jsonl.gz" 2>/dev/null; then
  fail "python's gzip accepted the mixed file, so this test's premise is wrong"
fi
mkdir "$tmp/out"
"$kiln" preprocess --input "$tmp/mixed.jsonl.gz" --output-prefix "$tmp/out/mixed" "${tok[@]}" >"$tmp/log" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] || fail "gzip followed by plain JSONL was accepted (its plain part silently dropped)"
grep -q "^kiln: error: cannot read --input .*mixed.jsonl.gz: byte [0-9]* follows the end of the gzip data" "$tmp/err" ||
  { cat "$tmp/err"; fail "unclear error"; }
[ -z "$(ls -A "$tmp/out")" ] || { ls -A "$tmp/out"; fail "files left behind"; }
echo "ok: $(cat "$tmp/err")"

head -c $(( $(stat -c %s "$tmp/part1.jsonl.gz") - 10 )) "$tmp/part1.jsonl.gz" > "$tmp/cut.jsonl.gz"
"$kiln" preprocess --input "$tmp/cut.jsonl.gz" --output-prefix "$tmp/out/cut" "${tok[@]}" >"$tmp/log" 2>"$tmp/err" &&
  fail "a truncated .gz was accepted"
grep -q "truncated" "$tmp/err" || { cat "$tmp/err"; fail "no truncation error"; }
echo "ok: $(grep 'kiln: error' "$tmp/err")"
