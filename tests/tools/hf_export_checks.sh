# Sourced by the kiln export / import --format hf tests (tests/cli/hf_export_*.sh):
# the checks every architecture shares. The sourcing script sets $kiln, $tmp
# (a scratch dir) and $ref (its NumPy reference, tests/tools/hf_*_numpy.py).
# Skips (status 77) without python3-numpy.

# The first python3 with NumPy (a pyenv shim on PATH may lack the Debian package).
py=
for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }; done
[ -n "$py" ] || { echo "SKIP: python3-numpy missing"; exit 77; }
hf_tools="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prompt="The quick "

# kiln generate's next-token logits for $prompt ($tmp/kiln_logits.json) and its
# 12-byte greedy continuation ($tmp/kiln_greedy) from checkpoint $1.
kiln_generate_reference() {
  "$kiln" generate --load "$1" --prompt "$prompt" --temperature 0 --max-new-tokens 12 --num-threads 2 \
    --logits-file "$tmp/kiln_logits.json" >"$tmp/kiln_out" 2>/dev/null
  head -c -1 "$tmp/kiln_out" >"$tmp/kiln_greedy"  # kiln generate ends with a newline
}

# $1, $2: logits JSON files; $3: the largest max |a - b| / max |b| allowed.
compare_logits() {
  "$py" - "$1" "$2" "$3" <<'PY'
import json, sys
import numpy as np
k = np.array(json.load(open(sys.argv[1]))); r = np.array(json.load(open(sys.argv[2])))
err = np.max(np.abs(k - r)) / np.max(np.abs(r))
print(f"logits: max |kiln - reference| / max |reference| = {err:.3g}")
sys.exit(0 if k.shape == r.shape and err <= float(sys.argv[3]) else 1)
PY
}

# The NumPy reference's logits for export $1 against kiln's within $2 relative.
check_logits() {
  "$py" "$ref" logits "$1" "$prompt" >"$tmp/numpy_logits.json"
  compare_logits "$tmp/kiln_logits.json" "$tmp/numpy_logits.json" "$2" || { echo "logits of $1 differ"; exit 1; }
}

# The NumPy reference's greedy continuation of export $1 is kiln's.
check_greedy() {
  "$py" "$ref" greedy "$1" "$prompt" 12 >"$tmp/numpy_greedy"
  cmp "$tmp/kiln_greedy" "$tmp/numpy_greedy" || { echo "greedy continuations differ"; exit 1; }
}

# Export $1 sharded above a 40KB limit into $2: several shards under the
# limit, an index, no model.safetensors.
export_sharded() {
  "$kiln" export --load "$1" --format hf --output "$2" --max-shard-size 40KB >/dev/null
  test ! -e "$2/model.safetensors"
  test -f "$2/model.safetensors.index.json"
  local shards f
  shards=$(ls "$2" | grep -c '^model-0000[0-9]-of-0000[0-9]\.safetensors$')
  [ "$shards" -gt 1 ] || { echo "expected several shards, got $shards"; exit 1; }
  for f in "$2"/model-*.safetensors; do
    [ "$(stat -c %s "$f")" -lt 60000 ] || { echo "$f is larger than the shard limit allows"; exit 1; }
  done
}

# Exports of checkpoint $1 in bf16 and f16 ($tmp/bf16, $tmp/f16): every tensor
# of the f32 export $2 in that dtype, each value rounded to nearest even; the
# bf16 logits within 5% of kiln's.
check_narrow_dtypes() {
  local dtype
  for dtype in bf16 f16; do
    "$kiln" export --load "$1" --format hf --output "$tmp/$dtype" --dtype $dtype >/dev/null
    "$py" - "$hf_tools" "$2" "$tmp/$dtype" $dtype <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from hf_numpy_common import load_dir
_, f32 = load_dir(sys.argv[2]); _, narrow = load_dir(sys.argv[3]); dtype = sys.argv[4]
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
  "$py" "$ref" logits "$tmp/bf16" "$prompt" >"$tmp/bf16_logits.json"
  compare_logits "$tmp/bf16_logits.json" "$tmp/kiln_logits.json" 0.05 || { echo "bf16 logits too far"; exit 1; }
}

# The validation loss of checkpoint $1 (the rest: the model's flags): one
# step at --lr 0 from --finetune (the model only, which an import is), which
# leaves the weights as loaded, then the validation
# batches, which start at the same sample whatever the iteration.
validation_loss() {
  local ck=$1
  shift
  "$kiln" train "$@" --micro-batch-size 4 --global-batch-size 8 --lr 0 --min-lr 0 --lr-warmup-iters 0 \
    --train-iters 1 --eval-iters 2 --eval-interval 1 --num-threads 2 --load "$ck" --finetune 2>&1 |
    grep -o 'validation loss at iteration [0-9]* | lm loss value: [^ ]*' | sed 's/.*value: //'
}
