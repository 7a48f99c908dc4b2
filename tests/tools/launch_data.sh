# Sourced by the launch-line tests (tests/cli/*megatron_launch_lines.sh):
# the files a Megatron GPT launch script points at, made here. Needs
# $kiln and $tmp. Sets $vocab, $merges (GPT-2's, from ../shared; skips,
# status 77, without it) and makes $tmp/gpt2/my-gpt2_text_document.bin/.idx
# with `kiln preprocess` from kiln's own docs (English prose, always present),
# one JSON document per paragraph.
shared=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared/data
vocab=$shared/gpt2/gpt2-vocab.json
merges=$shared/gpt2/gpt2-merges.txt
if [ ! -f "$vocab" ] || [ ! -f "$merges" ]; then
  echo "SKIPPED: needs $shared/gpt2/gpt2-vocab.json and gpt2-merges.txt (../shared beside the project)"
  exit 77
fi
mkdir -p "$tmp/gpt2"
python3 - "$(dirname "${BASH_SOURCE[0]}")/../../docs" >"$tmp/docs.jsonl" <<'PY'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*.md")):
    for paragraph in open(path, encoding="utf-8").read().split("\n\n"):
        if paragraph.strip():
            print(json.dumps({"text": paragraph}))
PY
# As Megatron's README: preprocess_data.py with the GPT-2 files and --append-eod.
"$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/gpt2/my-gpt2" --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$vocab" --merge-file "$merges" --append-eod --workers 2 2>"$tmp/preprocess.err" ||
  { cat "$tmp/preprocess.err"; exit 1; }
data=$tmp/gpt2/my-gpt2_text_document

# Runs one launch line ($1: its name, then kiln's command and flags) and
# checks that it trained: exit 0 and Megatron's iteration line with a loss.
# The output is left in $tmp/$1.log for further checks.
trains() {
  local name=$1; shift
  "$@" >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; echo "FAIL: $name did not train"; exit 1; }
  grep -q '] iteration .* lm loss: [0-9.E+-]* |' "$tmp/$name.log" ||
    { cat "$tmp/$name.log"; echo "FAIL: $name logged no loss"; exit 1; }
  echo "ok: $name trained ($(grep -c '] iteration ' "$tmp/$name.log") iteration lines)"
}
# Fails unless the run $1's log holds the text $2.
logged() { grep -qF -- "$2" "$tmp/$1.log" || { cat "$tmp/$1.log"; echo "FAIL: $1 did not log: $2"; exit 1; }; }
