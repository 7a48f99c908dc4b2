#!/usr/bin/env bash
# kiln export / import --format hf on bad input (issue 18 item 5): each case
# exits non-zero with one line that names the problem, and leaves no output
# directory and no temp directory behind.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=
for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }; done
[ -n "$py" ] || { echo "python3-numpy missing"; exit 77; }
model=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8)
"$kiln" train "${model[@]}" --micro-batch-size 1 --global-batch-size 1 --train-iters 1 --lr-warmup-iters 0 \
  --eval-iters 0 --num-threads 1 --save "$tmp/ck" >/dev/null 2>&1
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/good" >/dev/null
mkdir "$tmp/out"

# $1: name, $2: regex the one line must match, rest: the command. The work
# dir $tmp/out must stay empty.
expect_error() {
  local name=$1 pattern=$2; shift 2
  if "$@" >"$tmp/stdout" 2>"$tmp/stderr"; then echo "$name: exit 0"; exit 1; fi
  [ "$(wc -l <"$tmp/stderr")" -eq 1 ] || { echo "$name: not one line:"; cat "$tmp/stderr"; exit 1; }
  grep -Eq -- "$pattern" "$tmp/stderr" || { echo "$name: '$(cat "$tmp/stderr")' does not match '$pattern'"; exit 1; }
  [ -z "$(ls -A "$tmp/out")" ] || { echo "$name: left behind: $(ls -A "$tmp/out")"; exit 1; }
  echo "$name: $(cat "$tmp/stderr")"
}

expect_error "missing checkpoint" "nosuch" "$kiln" export --load "$tmp/nosuch" --format hf --output "$tmp/out/x"
"$kiln" train "${model[@]}" --normalization RMSNorm --swiglu --ffn-hidden-size 32 --micro-batch-size 1 --global-batch-size 1 \
  --train-iters 1 --eval-iters 0 --save "$tmp/llama" >/dev/null 2>&1 || { echo "the RMSNorm model did not train"; exit 1; }
expect_error "not a GPT-2 model" "uses RMSNorm, which Hugging Face's GPT2LMHeadModel cannot express" \
  "$kiln" export --load "$tmp/llama" --format hf --output "$tmp/out/x"
expect_error "unwritable output" "cannot write --output" \
  "$kiln" export --load "$tmp/ck" --format hf --output /dev/null/x
expect_error "existing output" "already exists" "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/good"
# --output a symlink: dangling or a loop is one plain line (N41); to an empty
# directory the export goes into the target and the link stays (N40: it was
# written beside the link and replaced it, the target left empty).
ln -s "$tmp/nonexistent/x" "$tmp/dangling"
expect_error "dangling --output" "^kiln: error: --output $tmp/dangling is a dangling symlink \(to $tmp/nonexistent/x\); " \
  "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/dangling"
ln -s "$tmp/loop" "$tmp/loop"
expect_error "--output a link loop" "^kiln: error: --output $tmp/loop is a symbolic link loop; " \
  "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/loop"
mkdir -p "$tmp/disk/target"; ln -s "$tmp/disk/target" "$tmp/link"
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/link" >/dev/null
[ -L "$tmp/link" ] && [ -f "$tmp/disk/target/model.safetensors" ] && [ -f "$tmp/disk/target/config.json" ] ||
  { ls -la "$tmp" "$tmp/disk/target"; echo "--output a symlink to a directory: the export is not in the target"; exit 1; }
[ "$(ls -A "$tmp/disk")" = target ] || { ls -A "$tmp/disk"; echo "--output a symlink: temporaries left"; exit 1; }
echo "--output a symlink to an empty directory: written into $tmp/disk/target, the link kept"
expect_error "--output a symlink to a full directory" "^kiln: error: --output $tmp/link \(a symlink to $tmp/disk/target\) already exists" \
  "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/link"
expect_error "unknown format" "--format 'onnx' is not supported" \
  "$kiln" export --load "$tmp/ck" --format onnx --output "$tmp/out/x"
expect_error "unknown dtype" "--dtype 'f8' is not supported" \
  "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/out/x" --dtype f8
expect_error "bad shard size" "--max-shard-size '5 lots' is not a size" \
  "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/out/x" --max-shard-size "5 lots"
# A write that fails part-way (file size limit, as a full disk): the temp directory goes too.
expect_error "write fails part-way" "cannot write --output" \
  bash -c 'trap "" XFSZ; ulimit -f 8; exec "$@"' - "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/out/x"
# The same under a plain ulimit -f (SIGXFSZ not ignored by the caller): kiln
# ignores it itself, so the write fails with EFBIG and the temporary goes;
# it used to die of SIGXFSZ (status 153) and leave .tmp_x.PID (N37).
# (SIGXFSZ is signal 25, bit 24 of SigIgn; a shell cannot un-ignore it.)
[ $(( 0x$(awk '/^SigIgn:/ {print $2}' /proc/self/status) >> 24 & 1 )) -eq 0 ] ||
  echo "note: SIGXFSZ is ignored by this test's parent, so the next case would pass without kiln's own fix"
expect_error "plain ulimit -f" "^kiln: error: cannot write --output $tmp/out/x: .*File too large" \
  bash -c 'ulimit -f 8; exec "$@"' - "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/out/x"

# Import: broken copies of the good export.
broken() { rm -rf "$tmp/in"; cp -r "$tmp/good" "$tmp/in"; }
broken; rm "$tmp/in/config.json"
expect_error "no config.json" "has no config.json" "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
broken; sed -i 's/"model_type": "gpt2"/"model_type": "bert"/' "$tmp/in/config.json"
expect_error "unknown model_type" 'model_type "bert" is not supported; kiln imports "gpt2", "llama" and "mpt"' \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
expect_error "unknown import format" "--format 'gguf' is not supported" \
  "$kiln" import --format gguf --input "$tmp/good" --save "$tmp/out/ck"

# Rewrites model.safetensors with one tensor ($2, GPT-2's c_attn by
# default) dropped, made all NaN or reshaped.
rewrite() {
  "$py" - "$tmp/in/model.safetensors" "$1" "${2:-transformer.h.0.attn.c_attn.weight}" <<'PY'
import json, struct, sys
path, change, name = sys.argv[1], sys.argv[2], sys.argv[3]
blob = open(path, "rb").read()
(n,) = struct.unpack("<Q", blob[:8]); header = json.loads(blob[8:8 + n]); data = blob[8 + n:]
tensors = {k: (v, data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items() if k != "__metadata__"}
if change == "drop":
    del tensors[name]
elif change == "nan":  # every value NaN (an F32 export's)
    tensors[name] = (tensors[name][0], struct.pack("<f", float("nan")) * (len(tensors[name][1]) // 4))
else:  # the same bytes, declared with kiln's (transposed) shape
    tensors[name][0]["shape"] = tensors[name][0]["shape"][::-1]
header, data, offset = {}, b"", 0
for k, (info, raw) in sorted(tensors.items(), key=lambda kv: kv[1][0]["data_offsets"][0]):
    info["data_offsets"] = [offset, offset + len(raw)]; header[k] = info; data += raw; offset += len(raw)
text = json.dumps(header).encode(); text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)
PY
}
broken; rewrite drop
expect_error "missing tensor" "no tensor transformer.h.0.attn.c_attn.weight" \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
# N22 (findings 2026-11-27): all-NaN weights imported with exit 0, and a --finetune
# from them skipped every step; kiln train never saves such weights.
broken; rewrite nan transformer.wte.weight
expect_error "NaN weights" "holds NaN or infinite weights \(in kiln's embedding.word_embeddings.weight\)" \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
broken; rewrite transpose
expect_error "wrong shape" \
  "model.safetensors tensor 'transformer.h.0.attn.c_attn.weight' has shape \[48,16\], the model needs \[16,48\] \(as config.json describes it\); the weights and config.json disagree" \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
# A tensor named twice in the header (the JSON parser kept the last entry,
# and the first one's bytes were reported as "unused bytes ... not
# contiguous", N19): one line naming the duplicate and the file.
broken
"$py" - "$tmp/in/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
blob = open(path, "rb").read()
(n,) = struct.unpack("<Q", blob[:8]); header = json.loads(blob[8:8 + n])
first, second = [k for k in header if k != "__metadata__"][:2]
text = json.dumps(header, separators=(",", ":"))[:-1] + ',"%s":%s}' % (first, json.dumps(header[second]))
text = text.encode(); text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + blob[8 + n:])
PY
dup=$("$py" -c "import json,struct,sys;b=open(sys.argv[1],'rb').read();print([k for k in json.loads(b[8:8+struct.unpack('<Q',b[:8])[0]]) if k!='__metadata__'][0])" "$tmp/good/model.safetensors")
expect_error "duplicate tensor name" "^kiln: error: $tmp/in/model.safetensors is not valid safetensors: tensor '$dup' appears twice in the header\$" \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
expect_error "import over checkpoints" "already holds checkpoints" \
  "$kiln" import --format hf --input "$tmp/good" --save "$tmp/ck"
test "$(cat "$tmp/ck/latest_checkpointed_iteration.txt")" = 1

# A sharded export whose index maps a tensor to "" or "." (the directory
# itself): the index is named, not the directory (N28).
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/sharded" --max-shard-size 1KB >/dev/null
for shard in "" "." ".."; do
  rm -rf "$tmp/in"; cp -r "$tmp/sharded" "$tmp/in"
  "$py" - "$tmp/in/model.safetensors.index.json" "$shard" <<'PY'
import json, sys
path, shard = sys.argv[1], sys.argv[2]
index = json.load(open(path)); index["weight_map"]["transformer.wte.weight"] = shard; json.dump(index, open(path, "w"))
PY
  expect_error "index maps to '$shard'" \
    "^kiln: error: $tmp/in/model.safetensors.index.json maps transformer.wte.weight to '$shard', not a file here\$" \
    "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
done
# An index that places a needed tensor in no shard: refused before any
# shard is read (N105: import reads only what config.json's model needs).
rm -rf "$tmp/in"; cp -r "$tmp/sharded" "$tmp/in"
"$py" - "$tmp/in/model.safetensors.index.json" <<'PY'
import json, sys
index = json.load(open(sys.argv[1])); del index["weight_map"]["transformer.ln_f.bias"]; json.dump(index, open(sys.argv[1], "w"))
PY
expect_error "index without a needed tensor" \
  "^kiln: error: $tmp/in/model.safetensors.index.json places no tensor transformer.ln_f.bias in a shard, and config.json's model needs it; the model is incomplete\$" \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"

# Llama (rotary positions) and MPT (ALiBi): what HF cannot express, and broken Llama exports.
train_tiny() {  # $1: --save dir, the rest: model options
  local save=$1
  shift
  "$kiln" train "${model[@]}" "$@" --micro-batch-size 1 --global-batch-size 1 --train-iters 1 --eval-iters 0 \
    --num-threads 1 --save "$save" >/dev/null 2>&1 || { echo "the model $* did not train"; exit 1; }
}
llama=(--normalization RMSNorm --swiglu --ffn-hidden-size 32 --position-embedding-type rope --disable-bias-linear)
train_tiny "$tmp/llama_qkln" "${llama[@]}" --qk-layernorm
expect_error "Llama with QK-LayerNorm" "uses --qk-layernorm, which Hugging Face's LlamaForCausalLM cannot express" \
  "$kiln" export --load "$tmp/llama_qkln" --format hf --output "$tmp/out/x"
train_tiny "$tmp/rope_layernorm" --position-embedding-type rope
expect_error "Llama with LayerNorm" "uses LayerNorm \(use --normalization RMSNorm\), which .*LlamaForCausalLM" \
  "$kiln" export --load "$tmp/rope_layernorm" --format hf --output "$tmp/out/x"
train_tiny "$tmp/mpt" --position-embedding-type alibi --disable-bias-linear --clip-qkv 6
expect_error "MPT with a LayerNorm bias" "uses LayerNorm with a bias .*, which Hugging Face's MptForCausalLM cannot" \
  "$kiln" export --load "$tmp/mpt" --format hf --output "$tmp/out/x"
train_tiny "$tmp/mpt_qkln" --position-embedding-type alibi --disable-bias-linear --disable-bias-layernorm \
  --exact-gelu --qk-layernorm
expect_error "MPT with QK-LayerNorm" "uses --qk-layernorm \(transformers' MptAttention does not implement" \
  "$kiln" export --load "$tmp/mpt_qkln" --format hf --output "$tmp/out/x"
train_tiny "$tmp/llama" "${llama[@]}"
"$kiln" export --load "$tmp/llama" --format hf --output "$tmp/good_llama" >/dev/null
broken() { rm -rf "$tmp/in"; cp -r "$tmp/good_llama" "$tmp/in"; }
broken; sed -i 's/"model_type": "llama"/"model_type": "mpt"/' "$tmp/in/config.json"
expect_error "MPT config without d_model" "'d_model' is \"missing\"; an MPT config needs a positive integer" \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
broken; sed -i 's/"hidden_act": "silu"/"hidden_act": "gelu"/' "$tmp/in/config.json"
expect_error "Llama with another activation" 'hidden_act "gelu" is not SwiGLU' \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
broken; rewrite drop model.layers.0.self_attn.q_proj.weight
expect_error "missing q_proj" "no tensor model.layers.0.self_attn.q_proj.weight" \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
broken; rewrite transpose model.layers.0.mlp.gate_proj.weight
expect_error "wrong-shaped gate_proj" \
  "tensor 'model.layers.0.mlp.gate_proj.weight' has shape \[16,32\], the model needs \[32,16\] \(as config.json describes it\)" \
  "$kiln" import --format hf --input "$tmp/in" --save "$tmp/out/ck"
ls -A "$tmp" | grep -q '^\.tmp' && { echo "a temp directory was left in $tmp"; exit 1; }
echo "all bad-input cases refused in one line, nothing left behind"
