#!/usr/bin/env bash
# The design rules of issue 12 that a grep can check, over the non-test
# sources of the tree given as $1:
#   1. one definition per op: each op's name string ("layernorm") appears in
#      include/kiln/ops.h and in no other source file;
#   2. adding an op touches few files: LAYERNORM's code (issue 12's yardstick)
#      and RMSNORM's (the first op added by docs/ADDING_AN_OP.md) are named in
#      at most 6 non-test files: the table, the graph/ops family file, the
#      conformance cases, one kernel file per backend. (Other ops may also
#      appear where a backend special-cases them, e.g. OpenCL's fusion.)
#   3. core/ is the only host-side client of the plugin ABI: no host file
#      outside core/ calls the plugin function table.
set -u
root=$1
fail=0
bad() {
  echo "FAIL: $*" >&2
  fail=1
}
cd "$root" || exit 1
dirs=(core graph compiler_cache backends trainer cli include)
existing=()
for d in "${dirs[@]}"; do [ -d "$d" ] && existing+=("$d"); done
sources() { grep -rl --include='*.cpp' --include='*.h' --include='*.hpp' --include='*.c' "$@" "${existing[@]}"; }

rows=$(grep -E '^ *X\([A-Z_0-9]+, [0-9]+, "' include/kiln/ops.h)
[ "$(wc -l <<<"$rows")" -ge 28 ] || bad "could not read the op table from include/kiln/ops.h"
while read -r code name; do
  # The checkpoint's optimizer metadata says {"type": "adamw"}: the
  # optimizer's name (as in Megatron's --optimizer), not the op's.
  files=$(sources -F "\"$name\"" | grep -v '^include/kiln/ops.h$')
  [ "$name" = adamw ] && files=$(grep -v '^trainer/checkpoint/checkpointer.cpp$' <<<"$files")
  # The default job's synthetic corpus has the noun pair {"rope", "ropes"}
  # among its words: text the model learns, not the op's name.
  [ "$name" = rope ] && files=$(grep -v '^trainer/data/corpus.cpp$' <<<"$files")
  # Megatron's --position-embedding-type values "rope" and "alibi" (parsed
  # and stored in checkpoints by trainer/model/model_options.cpp): flag values, not op names.
  case $name in rope | alibi) files=$(grep -v '^trainer/model/model_options.cpp$' <<<"$files") ;; esac
  # Hugging Face's config.json "hidden_act": "silu" (LlamaForCausalLM's
  # activation, written and checked by trainer/checkpoint/hf_llama.cpp): a
  # transformers config value, not the op's name.
  [ "$name" = silu ] && files=$(grep -v '^trainer/checkpoint/hf_llama.cpp$' <<<"$files")
  # LlamaConfig's "attention_dropout": 0.0 (written by hf_llama.cpp into
  # config.json): a transformers config key, not the op's name.
  [ "$name" = attention_dropout ] && files=$(grep -v '^trainer/checkpoint/hf_llama.cpp$' <<<"$files")
  # HF GPT2Config's "activation_function": "gelu" (the exact GELU, read and
  # written by trainer/checkpoint/hf_gpt2.cpp) and MptConfig's attn_config
  # key "alibi" (trainer/checkpoint/hf_mpt.cpp): transformers config
  # spellings, not op names.
  [ "$name" = gelu ] && files=$(grep -v '^trainer/checkpoint/hf_gpt2.cpp$' <<<"$files")
  [ "$name" = alibi ] && files=$(grep -v '^trainer/checkpoint/hf_mpt.cpp$' <<<"$files")
  # tokenizer.json's field names "split" (Metaspace) and "dropout" (BPE),
  # read by the Hugging Face tokenizer: JSON keys, not op names.
  case $name in split | dropout) files=$(grep -v '^trainer/data/tokenizers/hf/' <<<"$files") ;; esac
  # Megatron's grad scaler state key "scale" (trainer/loss_scaler.cpp writes
  # and reads it in meta.json): a checkpoint key, not the op's name.
  [ "$name" = scale ] && files=$(grep -v '^trainer/loss_scaler.cpp$' <<<"$files")
  [ -z "$files" ] || bad "op name \"$name\" is spelled outside include/kiln/ops.h: $(echo $files)"
done < <(sed -E 's/^ *X\(([A-Z_0-9]+), [0-9]+, "([a-z_0-9]+)".*/\1 \2/' <<<"$rows")

for code in LAYERNORM RMSNORM; do
  files=$(sources -E "KILN_OP_${code}\\b|X\\(${code},")
  n=$(wc -l <<<"$files")
  [ "$n" -le 6 ] || bad "op $code is named in $n non-test files (at most 6): $(echo $files)"
done

host=()
for d in graph compiler_cache trainer cli; do [ -d "$d" ] && host+=("$d"); done
abi=$(grep -rnE 'raw_table\(|api_?->|\.api\b' --include='*.cpp' --include='*.h' "${host[@]}")
[ -z "$abi" ] || bad "host code outside core/ calls the plugin function table: $abi"

[ $fail -eq 0 ] && echo "source rules hold: one definition per op, core/ the only ABI client"
exit $fail
