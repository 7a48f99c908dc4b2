#!/usr/bin/env bash
# N46 (findings 2026-11-27): one tokenizer.json id of 2^28 cost 8.4 GB (the
# id table has a slot per id up to the largest), and 2^31 - 1 ended in "out
# of host memory; use a smaller model or batch". An id far beyond the
# tokenizer's entry count is now refused in one line naming the file, the
# token and the id, before anything is allocated.
# Not under ASan: it caps the run's address space at 4 GiB (ulimit -v), so that a
# regression fails here instead of OOM-killing a shared machine, and ASan's shadow
# memory needs terabytes of address space.
set -uo pipefail
kiln=$1
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../data/tokenizers" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf '{"text": "Hello world, hello tokenizer."}\n' >"$tmp/in.jsonl"
check() {  # where in tokenizer.json, the python statement that sets the id
  mkdir -p "$tmp/t" && cp "$data/llama3_style/tokenizer_config.json" "$tmp/t/"
  python3 - "$data/llama3_style/tokenizer.json" "$tmp/t/tokenizer.json" "$2" <<'PY' || fail "edit"
import json, sys
d = json.load(open(sys.argv[1])); v = d['model']['vocab']; a = d['added_tokens']
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], 'w'))
PY
  (ulimit -v 4194304; timeout 30 "$kiln" preprocess --tokenizer-type HuggingFaceTokenizer --tokenizer-model "$tmp/t" \
    --input "$tmp/in.jsonl" --output-prefix "$tmp/o") >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -eq 0 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q "tokenizer.json: $1 gives .* id 268435456, far beyond its" "$tmp/err"; then
    echo "FAIL ($1): rc=$rc"; cat "$tmp/err"; exit 1
  fi
  echo "ok: $(cat "$tmp/err")"
}
check model.vocab 'v[list(v)[5]] = 2**28'
check 'added_tokens\[0\]' 'a[0]["id"] = 2**28'
# The unchanged tokenizer still preprocesses.
cp "$data/llama3_style/tokenizer.json" "$tmp/t/"
"$kiln" preprocess --tokenizer-type HuggingFaceTokenizer --tokenizer-model "$tmp/t" --input "$tmp/in.jsonl" \
  --output-prefix "$tmp/o" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "the unchanged tokenizer"; }
