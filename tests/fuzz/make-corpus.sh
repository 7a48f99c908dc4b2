#!/usr/bin/env bash
# Regenerates the fuzzers' seed corpora (tests/fuzz/corpus/<target>/) and the
# small vocabulary in tests/fuzz/data/ from kiln's own code:
#   - kiln_fuzz_gen_corpus (gen_corpus.cpp): serialized IR of the GPT step
#     graphs and of one small graph per op group, the CPU plugin's executables
#     for them, .idx/.bin pairs from the dataset writer, safetensors files
#     from the writer, checkpoint metadata, JSONL of the built-in corpus, and a
#     BPE vocabulary learned from it;
#   - make-vulkan-corpus.py: the Vulkan plugin's executables of those IR seeds;
#   - the kiln binary: a checkpoint from `kiln train --save` (meta.json,
#     model/optimizer safetensors) and a dataset from `kiln preprocess`.
# The output is deterministic; commit it. Usage: tests/fuzz/make-corpus.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
cmake --build "$build" --target kiln kiln_fuzz_gen_corpus kiln-backend-vulkan
gen=$build/bin/kiln_fuzz_gen_corpus
kiln=$build/bin/kiln

rm -rf "$here/corpus" "$here/data"
"$gen" "$here"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kiln" train --mock-data --vocab-size 16 --num-layers 1 --hidden-size 8 --num-attention-heads 2 \
  --seq-length 8 --micro-batch-size 2 --train-iters 2 --eval-iters 0 --save "$tmp/ckpt" > /dev/null
cp "$tmp/ckpt/iter_0000002/meta.json" "$here/corpus/checkpoint_meta/train_meta.json"
cp "$tmp/ckpt/latest_checkpointed_iteration.txt" "$here/corpus/checkpoint_meta/train_latest.txt"
cp "$tmp/ckpt/iter_0000002/model.safetensors" "$here/corpus/safetensors/train_model.safetensors"
cp "$tmp/ckpt/iter_0000002/optimizer.safetensors" "$here/corpus/safetensors/train_optimizer.safetensors"

"$kiln" preprocess --input "$here/corpus/jsonl/stories.jsonl" --output-prefix "$tmp/stories" --append-eod \
  --tokenizer-type GPT2BPETokenizer --vocab-file "$here/data/tiny-vocab.json" \
  --merge-file "$here/data/tiny-merges.txt" > /dev/null 2>&1
"$gen" pack-mmidx "$tmp/stories_text_document" "$here/corpus/mmidx/preprocessed_stories.mmidx"

# The Vulkan plugin's executables of the IR seeds above (same seeds, so
# regenerated with them).
python3 "$here/make-vulkan-corpus.py" "$build"

for d in "$here"/corpus/*/; do
  printf '%-16s %3d files %7d bytes\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)" "$(cat "$d"/* | wc -c)"
done
