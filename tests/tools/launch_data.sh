# Sourced by the launch-line tests (tests/cli/*megatron_launch_lines.sh):
# the files a Megatron GPT launch script points at, made here. Needs
# $kiln and $tmp. Sets $vocab, $merges (GPT-2's, from ../shared; skips,
# status 77, without it) and makes $tmp/gpt2/my-gpt2_text_document.bin/.idx
# with `kiln preprocess` from kiln's own docs (English prose, always present),
# one JSON document per paragraph; trains and logged: launch_checks.sh.
shared=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared/data
vocab=$shared/gpt2/gpt2-vocab.json
merges=$shared/gpt2/gpt2-merges.txt
if [ ! -f "$vocab" ] || [ ! -f "$merges" ]; then
  echo "SKIPPED: needs $shared/gpt2/gpt2-vocab.json and gpt2-merges.txt (../shared beside the project)"
  exit 77
fi
mkdir -p "$tmp/gpt2"
python3 "$(dirname "${BASH_SOURCE[0]}")/docs_jsonl.py" >"$tmp/docs.jsonl"
# As Megatron's README: preprocess_data.py with the GPT-2 files and --append-eod.
"$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/gpt2/my-gpt2" --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$vocab" --merge-file "$merges" --append-eod --workers 2 2>"$tmp/preprocess.err" ||
  { cat "$tmp/preprocess.err"; exit 1; }
data=$tmp/gpt2/my-gpt2_text_document

source "$(dirname "${BASH_SOURCE[0]}")/launch_checks.sh"
