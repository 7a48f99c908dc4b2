#!/usr/bin/env bash
# --max-position-embeddings above --seq-length, as Megatron allows it: with
# learned absolute positions the table has that many rows and the model uses
# the first --seq-length (the same losses, bit for bit, as a table of exactly
# --seq-length rows, whose initial values are those first rows); the
# checkpoint holds the whole table and the HF export says n_positions = its
# rows. With rope there is no table: any larger value trains the same model.
# Smaller than --seq-length is an error.
set -euo pipefail
# Resumes that change the schedule flags (--train-iters sets Megatron's weight-decay
# steps) take the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --train-iters 4 --log-interval 1 --eval-iters 1 --eval-interval 2 --num-threads 1)
fail() { echo "FAIL: $*"; exit 1; }
# Each step's loss and grad norm, and each validation line (not timings).
steps() { grep -o '"grad_norm":[^,]*\|"iteration":[0-9]*\|"lm_loss":[^,]*' "$1"; }
same() {  # two runs' steps and validation losses are identical
  [ "$(steps "$tmp/$1.jsonl")" = "$(steps "$tmp/$2.jsonl")" ] || fail "$3: the losses differ"
  [ "$(grep 'validation loss' "$tmp/$1.out")" = "$(grep 'validation loss' "$tmp/$2.out")" ] ||
    fail "$3: the validation losses differ"
  [ -n "$(steps "$tmp/$1.jsonl")" ] || fail "$3: no metrics"
  echo "ok: $3"
}
run() {  # run NAME FLAGS...
  local name=$1; shift
  "$kiln" train "${common[@]}" "$@" --metrics-file "$tmp/$name.jsonl" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
    { cat "$tmp/$name.err"; fail "$name did not train"; }
}

run learned
run learned64 --max-position-embeddings 64 --save "$tmp/ck"
same learned learned64 "learned positions, a 64-row table for 32 positions trains as a 32-row one"
python3 - "$tmp/ck/iter_0000004/model.safetensors" <<'EOF' || fail "the checkpoint's position table is not [64, 32]"
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
sys.exit(header["embedding.position_embeddings.weight"]["shape"] != [64, 32])
EOF
grep -q '"max_position_embeddings": *64' "$tmp/ck/iter_0000004/meta.json" || fail "meta.json does not record 64 rows"
echo "ok: the checkpoint holds the 64-row table"

# Resuming needs the same table; the HF export writes it whole.
"$kiln" train "${common[@]}" --train-iters 6 --max-position-embeddings 64 --load "$tmp/ck" --override-opt_param-scheduler >/dev/null 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "resume with --max-position-embeddings 64"; }
if "$kiln" train "${common[@]}" --train-iters 6 --load "$tmp/ck" --override-opt_param-scheduler >/dev/null 2>"$tmp/err"; then
  fail "resumed a 64-row table into a 32-row model"
fi
grep -q '"max_position_embeddings":64' "$tmp/err" || { cat "$tmp/err"; fail "wrong error for another table size"; }
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >/dev/null
grep -q '"n_positions": 64' "$tmp/hf/config.json" || fail "HF export: n_positions is not 64"
echo "ok: resume and HF export (n_positions 64)"

# Rope: no table, so a larger value changes nothing.
run rope --position-embedding-type rope
run rope4k --position-embedding-type rope --max-position-embeddings 4096
same rope rope4k "rope with --max-position-embeddings 4096"

# Smaller than the sequence: one line naming both and the fix.
if "$kiln" train "${common[@]}" --max-position-embeddings 16 >/dev/null 2>"$tmp/err"; then fail "accepted 16 < 32"; fi
[ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "--max-position-embeddings 16 is smaller than --seq-length 32" "$tmp/err" ||
  { cat "$tmp/err"; fail "wrong error for 16 < 32"; }
echo "ok: $(cat "$tmp/err")"

# The table's first stage and its replicas under model parallelism.
common=("${common[@]}" --eval-iters 0)
run one --max-position-embeddings 64
mpi 2 "$kiln" train "${common[@]}" --max-position-embeddings 64 --tensor-model-parallel-size 2 --sequence-parallel \
  --metrics-file "$tmp/tp.jsonl" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "tensor parallel"; }
same_trajectory "$tmp/one.jsonl" "$tmp/tp.jsonl" 4 "64-row table, tensor and sequence parallel 2"
mpi 2 "$kiln" train "${common[@]}" --max-position-embeddings 64 --pipeline-model-parallel-size 2 \
  --metrics-file "$tmp/pp.jsonl" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "pipeline parallel"; }
same_trajectory "$tmp/one.jsonl" "$tmp/pp.jsonl" 4 "64-row table, pipeline parallel 2"
