#!/usr/bin/env bash
# Megatron's --apply-residual-connection-post-layernorm (each layer's
# residuals start from the norms' outputs), the option added to show the
# model-option table (trainer/model/model_options.h):
#   - a small GPT learns with it on the embedded corpus, and its run differs
#     from the same model without it (the flag takes effect);
#   - its checkpoint records it: `kiln generate` and a resume need no model
#     flag (--use-checkpoint-args), and the resumed losses equal a run given
#     the flag;
#   - `kiln export --format hf` refuses it by name (no HF architecture has
#     it), writing nothing;
#   - under mpirun, TP=2, with and without --sequence-parallel, follows the
#     one-process run (skipped without mpirun).
set -euo pipefail
# Resumes that change the schedule flags (--train-iters sets Megatron's weight-decay
# steps) take the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --apply-residual-connection-post-layernorm)
run=(--micro-batch-size 8 --lr-warmup-iters 5 --log-interval 1 --eval-iters 0 --num-threads 2)
loss() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }

"$kiln" train "${model[@]}" "${run[@]}" --train-iters 30 --save "$tmp/ck" --metrics-file "$tmp/post.jsonl" >/dev/null
first=$(loss "$tmp/post.jsonl" | head -1)
last=$(loss "$tmp/post.jsonl" | tail -1)
echo "post-LN residuals: loss $first -> $last"
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 4.0 && l < f - 1.0) }' || { echo "loss did not fall enough"; exit 1; }
"$kiln" train "${model[@]:0:8}" "${run[@]}" --train-iters 30 --metrics-file "$tmp/pre.jsonl" >/dev/null
[ "$(loss "$tmp/post.jsonl")" != "$(loss "$tmp/pre.jsonl")" ] || { echo "the flag changed nothing"; exit 1; }

grep -Eq '"apply_residual_connection_post_layernorm": ?true' "$tmp/ck/iter_0000030/meta.json" ||
  { echo "meta.json does not record the option:"; cat "$tmp/ck/iter_0000030/meta.json"; exit 1; }
"$kiln" generate --load "$tmp/ck" --prompt "The " --max-new-tokens 8 --num-threads 2 >/dev/null
"$kiln" train "${model[@]}" "${run[@]}" --train-iters 34 --load "$tmp/ck" --override-opt_param-scheduler --metrics-file "$tmp/flags.jsonl" >/dev/null
"$kiln" train "${run[@]}" --use-checkpoint-args --train-iters 34 --load "$tmp/ck" --override-opt_param-scheduler --metrics-file "$tmp/stored.jsonl" >/dev/null
[ -n "$(loss "$tmp/stored.jsonl")" ] && [ "$(loss "$tmp/stored.jsonl")" = "$(loss "$tmp/flags.jsonl")" ] ||
  { echo "a resume from the stored config trained differently from the flags"; exit 1; }

status=0
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >"$tmp/export.log" 2>&1 || status=$?
[ "$status" != 0 ] && grep -q 'uses --apply-residual-connection-post-layernorm' "$tmp/export.log" ||
  { echo "export did not refuse the option (status $status):"; cat "$tmp/export.log"; exit 1; }
[ ! -e "$tmp/hf" ] || { echo "a refused export left $tmp/hf behind"; exit 1; }
echo "checkpoint records the option; export refuses it"

if command -v mpirun >/dev/null 2>&1; then
  source "$(dirname "$0")/../tools/mpi.sh"
  layout=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --apply-residual-connection-post-layernorm
          --micro-batch-size 2 --global-batch-size 4 --log-interval 1 --eval-iters 0 --num-threads 1 --train-iters 8)
  "$kiln" train "${layout[@]}" --metrics-file "$tmp/one.jsonl" >/dev/null
  mpi 2 "$kiln" train "${layout[@]}" --tensor-model-parallel-size 2 --metrics-file "$tmp/tp2.jsonl" >"$tmp/tp2.log" 2>&1 ||
    { cat "$tmp/tp2.log"; exit 1; }
  same_trajectory "$tmp/one.jsonl" "$tmp/tp2.jsonl" 8 "post-LN residuals, TP=2 vs 1 process"
  mpi 2 "$kiln" train "${layout[@]}" --tensor-model-parallel-size 2 --sequence-parallel --metrics-file "$tmp/sp2.jsonl" \
    >"$tmp/sp2.log" 2>&1 || { cat "$tmp/sp2.log"; exit 1; }
  same_trajectory "$tmp/one.jsonl" "$tmp/sp2.jsonl" 8 "post-LN residuals, TP=2 with SP vs 1 process"
else
  echo "SKIPPED the TP=2 part: mpirun not found"
fi
