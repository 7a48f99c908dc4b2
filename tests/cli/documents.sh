#!/usr/bin/env bash
# Megatron's document flags on packed samples (issue 35): with
# --reset-position-ids, --reset-attention-mask and --eod-mask-loss, each
# micro-batch's loss equals an independent NumPy reference
# (tests/tools/documents_numpy.py: Megatron's get_ltor_masks_and_position_ids
# and loss_func, over the Hugging Face export of the run's parameters) within
# 1e-6 relative, from KILN_TEST_DUMP_BATCHES:
#   1. Llama-style (RoPE, grouped queries, SwiGLU) with all three flags and
#      with each alone, GPT-2-style (learned positions) likewise, on cpu;
#   2. the three flags on OpenCL and Vulkan, where a device is present;
#   3. under mpirun: TP=2, TP=2 with --sequence-parallel, and PP=2 (whose
#      losses follow one process's within 1e-6 over 6 steps: a pipeline run
#      has no dump);
#   4. the flags without a tokenizer (no EOD) are refused in one line, and
#      attention memory: the arena of --reset-attention-mask's step graphs
#      is the arena without it.
# Samples are 32 tokens of documents 3 to 40 tokens long, so most samples
# hold several EODs; lr 0 keeps the saved parameters those of iteration 1,
# and an initialisation of std 0.3 (not 0.02) makes attention, hence the
# masks and positions, matter to the loss.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3; [ -x "$py" ] || py=python3
ref="$(cd "$(dirname "$0")/../tools" && pwd)/documents_numpy.py"
tokenizer=$(cd "$(dirname "$0")/../data/tokenizers/llama3_style" && pwd)

"$py" - "$tmp/docs.jsonl" <<'PY'
import json, random, sys
rng = random.Random(35)
words = "the a of to in is was he she it on for with as his her at by not but from they".split()
with open(sys.argv[1], "w") as out:
    for _ in range(120):
        out.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(rng.randint(2, 30)))}) + "\n")
PY
"$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/docs" --tokenizer-type HuggingFaceTokenizer \
  --tokenizer-model "$tokenizer" --append-eod --workers 1 >/dev/null 2>&1

docs=(--reset-position-ids --reset-attention-mask --eod-mask-loss)
data=(--data-path "$tmp/docs_text_document" --tokenizer-type HuggingFaceTokenizer --tokenizer-model "$tokenizer"
      --split 100,0,0 --seq-length 32 --micro-batch-size 2 --global-batch-size 4 --eval-iters 0 --log-interval 1
      --hidden-dropout 0 --attention-dropout 0 --num-threads 2)
shape=(--num-layers 2 --hidden-size 32 --num-attention-heads 4)
gpt2=("${shape[@]}")
llama3=("${shape[@]}" "${llama[@]}" --rotary-base 500000)
one_step=(--train-iters 1 --lr 0 --min-lr 0 --lr-warmup-iters 0 --init-method-std 0.3)

# check NAME "FLAGS" [LAUNCH...] -- TRAIN ARGS...: one step with the dump,
# the export, and the reference's verdict on every micro-batch.
check() {
  local name=$1 flags=$2; shift 2
  local launch=()
  while [ "$1" != -- ]; do launch+=("$1"); shift; done
  shift
  # shellcheck disable=SC2086  # FLAGS splits into flags
  KILN_TEST_DUMP_BATCHES="$tmp/$name.dump" "${launch[@]}" "$kiln" train "${data[@]}" "${one_step[@]}" "$@" $flags \
    --save "$tmp/$name" >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; echo "FAIL: $name: train"; exit 1; }
  "$kiln" export --load "$tmp/$name" --format hf --output "$tmp/$name.hf" >/dev/null
  echo -n "$name: "
  # shellcheck disable=SC2086
  "$py" "$ref" "$tmp/$name.hf" "$tmp/$name.dump" "$eod" --seq-length 32 $flags ||
    { echo "FAIL: $name: kiln's loss differs from the reference"; exit 1; }
}

# The EOD id, as the run logs it.
"$kiln" train "${data[@]}" "${gpt2[@]}" "${one_step[@]}" --eod-mask-loss >"$tmp/eod.log" 2>&1 ||
  { cat "$tmp/eod.log"; exit 1; }
eod=$(sed -n 's/.*documents (EOD id \([0-9]*\)): no loss where the input is EOD$/\1/p' "$tmp/eod.log")
[ -n "$eod" ] || { cat "$tmp/eod.log"; echo "FAIL: no documents line with the EOD id"; exit 1; }

# 1. cpu: all three flags, each alone, and none (the reference's own baseline).
check llama "${docs[*]}" -- "${llama3[@]}"
for flag in "${docs[@]}"; do check "llama${flag}" "$flag" -- "${llama3[@]}"; done
check llama_plain "" -- "${llama3[@]}"
check gpt2 "${docs[*]}" -- "${gpt2[@]}"
check gpt2--reset-position-ids --reset-position-ids -- "${gpt2[@]}"

# 2. The other backends, where present.
listing=$("$kiln" devices 2>&1)
for backend in opencl vulkan; do
  if grep -A1 -E "^backend $backend " <<<"$listing" | grep -q '^  device 0:'; then
    check "llama_$backend" "${docs[*]}" -- "${llama3[@]}" --backend "$backend"
  else
    echo "SKIPPED $backend: no device"
  fi
done

# 3. Tensor and pipeline parallelism.
check llama_tp2 "${docs[*]}" mpirun "${mpi_flags[@]}" -np 2 -- "${llama3[@]}" --tensor-model-parallel-size 2
check llama_tp2_sp "${docs[*]}" mpirun "${mpi_flags[@]}" -np 2 -- "${llama3[@]}" --tensor-model-parallel-size 2 \
  --sequence-parallel
steps=(--train-iters 6 --lr 1e-3 --lr-warmup-iters 0 --num-layers 4)
"$kiln" train "${data[@]}" "${llama3[@]}" "${docs[@]}" "${steps[@]}" --metrics-file "$tmp/one.jsonl" >/dev/null 2>&1
mpi 2 "$kiln" train "${data[@]}" "${llama3[@]}" "${docs[@]}" "${steps[@]}" --pipeline-model-parallel-size 2 \
  --metrics-file "$tmp/pp2.jsonl" >/dev/null 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/pp2.jsonl" 6 "documents PP=2 vs 1 process" 1e-6

# 4. No EOD without a tokenizer; attention memory.
for flag in "${docs[@]}"; do
  if "$kiln" train "${gpt2[@]}" --train-iters 1 "$flag" >"$tmp/no_eod.out" 2>"$tmp/no_eod.err"; then
    echo "FAIL: $flag trained on the embedded corpus, which has no EOD"; exit 1
  fi
  [ "$(grep -c . "$tmp/no_eod.err")" -eq 1 ] && grep -q "kiln: error: $flag finds documents by the tokenizer's EOD" \
    "$tmp/no_eod.err" || { cat "$tmp/no_eod.err"; echo "FAIL: $flag without EOD: expected one line"; exit 1; }
done
arena() {  # the largest arena of a run's compiled graphs, MiB, at 256 tokens (the scores then dominate)
  KILN_LOG_LEVEL=debug "$kiln" train "${data[@]}" "${llama3[@]}" "${one_step[@]}" --seq-length 256 "$@" 2>&1 |
    sed -n 's/.*compiled graph on .*, arena \([0-9.]*\) MiB$/\1/p' | sort -g | tail -1
}
plain=$(arena) masked=$(arena --reset-attention-mask)
echo "largest arena: $plain MiB plain, $masked MiB with --reset-attention-mask"
[ -n "$plain" ] && [ "$plain" = "$masked" ] || { echo "FAIL: attention memory grew with the document mask"; exit 1; }
echo "documents: every micro-batch matches the reference"
