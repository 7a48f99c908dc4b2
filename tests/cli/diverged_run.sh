#!/usr/bin/env bash
# A run that diverges (issue 13, item 16) must not look like a success:
# iterations that averaged nothing log no loss (Megatron leaves the field
# out; a 0 would read as a perfect loss), and a checkpoint of non-finite
# weights is refused with one line, leaving the last good one as latest.
# A learning rate above fp32's range makes the first update infinite.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0
        --log-interval 1 --save "$tmp/ck")
"$kiln" train "${common[@]}" --train-iters 2 >"$tmp/good.out" 2>&1 || { cat "$tmp/good.out"; fail "the good run failed"; }
"$kiln" train "${common[@]}" --load "$tmp/ck" --override-opt_param-scheduler --train-iters 5 --lr 1e39 --metrics-file "$tmp/m.jsonl" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] || fail "the diverged run exited 0"
grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
[ "$(wc -l < "$tmp/err.lines")" -eq 1 ] || { cat "$tmp/err"; fail "expected one error line"; }
grep -q "not saving the checkpoint at iteration 5: parameter .* holds NaN or infinite values" "$tmp/err.lines" ||
  { cat "$tmp/err.lines"; fail "the error does not name the non-finite parameter"; }
[ "$(cat "$tmp/ck/latest_checkpointed_iteration.txt")" = 2 ] || fail "latest is no longer the good iteration 2"
[ ! -e "$tmp/ck/iter_0000005" ] || fail "a non-finite checkpoint was written"
grep -q "number of skipped iterations:   [1-9]" "$tmp/out" || { cat "$tmp/out"; fail "no iteration was skipped"; }
if grep "number of skipped iterations" "$tmp/out" | grep -q "lm loss: 0.000000E+00"; then
  fail "a skipped interval logged a loss of 0"
fi
skipped_lines=$(grep -c '"skipped_iterations":[1-9]' "$tmp/m.jsonl")
skipped_with_loss=$(grep '"skipped_iterations":[1-9]' "$tmp/m.jsonl" | grep -c '"lm_loss"')
[ "$skipped_lines" -gt 0 ] && [ "$skipped_with_loss" -eq 0 ] || { cat "$tmp/m.jsonl"; fail "skipped intervals carry lm_loss"; }
echo "ok: $(cat "$tmp/err.lines")"
