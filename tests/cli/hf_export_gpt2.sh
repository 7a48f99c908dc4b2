#!/usr/bin/env bash
# kiln export --format hf / kiln import --format hf for GPT-2 (issue 18):
# an independent NumPy GPT-2 (tests/tools/hf_gpt2_numpy.py, written from HF's
# semantics) reads the export and matches kiln generate's logits within 1e-4
# relative and its greedy continuation; import of the export gives back the
# original model.safetensors byte for byte, and kiln train --load --finetune
# starts from it at the original's loss; sharding above --max-shard-size; bf16/f16 are round-to-nearest-even.
set -euo pipefail
kiln=$1
ref="$(cd "$(dirname "$0")/../tools" && pwd)/hf_gpt2_numpy.py"
# The first python3 with NumPy (a pyenv shim on PATH may lack the Debian package).
py=
for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }; done
[ -n "$py" ] || { echo "python3-numpy missing"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32)
common=("${model[@]}" --micro-batch-size 4 --global-batch-size 8 --lr-warmup-iters 5 --lr 0.005 --eval-iters 0
        --num-threads 2)
# 300 steps (about a second): enough that the greedy continuation is words, not one repeated byte.
"$kiln" train "${common[@]}" --train-iters 300 --save "$tmp/ck" >/dev/null 2>&1

prompt="The quick "
check_logits() {  # $1: export dir, $2: relative tolerance
  "$py" - "$tmp/kiln_logits.json" <("$py" "$ref" logits "$1" "$prompt") "$2" <<'PY'
import json, sys
import numpy as np
k = np.array(json.load(open(sys.argv[1]))); r = np.array(json.load(open(sys.argv[2])))
err = np.max(np.abs(k - r)) / np.max(np.abs(r))
print(f"logits: max |kiln - numpy| / max |numpy| = {err:.3g}")
sys.exit(0 if k.shape == r.shape and err <= float(sys.argv[3]) else 1)
PY
}

# f32 export: logits and greedy continuation.
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >/dev/null
"$kiln" generate --load "$tmp/ck" --prompt "$prompt" --temperature 0 --max-new-tokens 12 --num-threads 2 \
  --logits-file "$tmp/kiln_logits.json" >"$tmp/kiln_out" 2>/dev/null
check_logits "$tmp/hf" 1e-4
head -c -1 "$tmp/kiln_out" >"$tmp/kiln_greedy"  # kiln generate ends with a newline
"$py" "$ref" greedy "$tmp/hf" "$prompt" 12 >"$tmp/numpy_greedy"
cmp "$tmp/kiln_greedy" "$tmp/numpy_greedy" || { echo "greedy continuations differ"; exit 1; }
grep -q '"model_type": "gpt2"' "$tmp/hf/config.json"
test -f "$tmp/hf/generation_config.json"

# Import of the export: the same tensors, bit for bit, and kiln train continues from it.
"$kiln" import --format hf --input "$tmp/hf" --save "$tmp/imported" >/dev/null
cmp "$tmp/ck/iter_0000300/model.safetensors" "$tmp/imported/iter_0000000/model.safetensors" ||
  { echo "import of the export changed the model tensors"; exit 1; }
# An import is a model only (Megatron's converted checkpoints): --finetune
# starts from it with the loss the original checkpoint has on the same batch.
"$kiln" train "${common[@]}" --train-iters 10 --load "$tmp/imported" --finetune --log-interval 1 \
  --metrics-file "$tmp/continued.jsonl" >/dev/null 2>&1
grep -q '"iteration":10' "$tmp/continued.jsonl" || { echo "kiln train --load --finetune of the import did not run"; exit 1; }
"$kiln" train "${common[@]}" --train-iters 10 --load "$tmp/ck" --finetune --log-interval 1 \
  --metrics-file "$tmp/original.jsonl" >/dev/null 2>&1
first_loss=$(grep -o '"lm_loss":[^,}]*' "$tmp/continued.jsonl" | head -1 | cut -d: -f2)
original_loss=$(grep -o '"lm_loss":[^,}]*' "$tmp/original.jsonl" | head -1 | cut -d: -f2)
[ "$first_loss" = "$original_loss" ] ||
  { echo "the import starts at loss $first_loss, the original checkpoint at $original_loss"; exit 1; }
# ... which is the trained model's: a fresh model's first loss is about ln(256) = 5.5.
"$py" -c "import sys; sys.exit(0 if float('$first_loss') < 4 else 1)" ||
  { echo "the imported checkpoint's first loss $first_loss is a fresh model's"; exit 1; }
if "$kiln" train "${common[@]}" --train-iters 10 --load "$tmp/imported" >/dev/null 2>"$tmp/err"; then
  echo "a plain --load of an import (no optimizer state) was accepted"; exit 1
fi
grep -q 'has no optimizer state .*pass --no-load-optim or --finetune' "$tmp/err" || { cat "$tmp/err"; exit 1; }

# Sharded: more than one shard and an index; the same logits and tensors.
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/sharded" --max-shard-size 40KB >/dev/null
test ! -e "$tmp/sharded/model.safetensors"
test -f "$tmp/sharded/model.safetensors.index.json"
shards=$(ls "$tmp/sharded" | grep -c '^model-0000[0-9]-of-0000[0-9]\.safetensors$')
[ "$shards" -gt 1 ] || { echo "expected several shards, got $shards"; exit 1; }
for f in "$tmp"/sharded/model-*.safetensors; do
  [ "$(stat -c %s "$f")" -lt 60000 ] || { echo "$f is larger than the shard limit allows"; exit 1; }
done
check_logits "$tmp/sharded" 1e-4
"$kiln" import --format hf --input "$tmp/sharded" --save "$tmp/imported_sharded" >/dev/null
cmp "$tmp/ck/iter_0000300/model.safetensors" "$tmp/imported_sharded/iter_0000000/model.safetensors"

# bf16 and f16: every tensor in that dtype, each value f32 rounded to nearest even.
for dtype in bf16 f16; do
  "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/$dtype" --dtype $dtype >/dev/null
  "$py" - "$ref" "$tmp/hf" "$tmp/$dtype" $dtype <<'PY'
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("ref", sys.argv[1]); ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
_, f32 = ref.load_dir(sys.argv[2]); _, narrow = ref.load_dir(sys.argv[3]); dtype = sys.argv[4]
assert set(f32) == set(narrow)
for name, (_, a) in f32.items():
    got_dtype, b = narrow[name]
    assert got_dtype == dtype.upper(), f"{name} is {got_dtype}"
    if dtype == "f16":
        want = a.astype(np.float16).astype(np.float32)  # numpy rounds to nearest even
    else:
        u = a.astype(np.float32).view(np.uint32)
        want = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    assert np.array_equal(want.view(np.uint32), b.astype(np.float32).view(np.uint32)), f"{name} not RNE"
print(f"{dtype}: {len(f32)} tensors rounded to nearest even")
PY
done
"$py" - "$tmp/kiln_logits.json" <("$py" "$ref" logits "$tmp/bf16" "$prompt") <<'PY'
import json, sys
import numpy as np
k = np.array(json.load(open(sys.argv[1]))); r = np.array(json.load(open(sys.argv[2])))
sys.exit(0 if np.max(np.abs(k - r)) / np.max(np.abs(k)) < 0.05 else 1)  # bf16 keeps 8 bits
PY
echo "hf export/import: logits, greedy, round trip, shards and bf16/f16 all match"
