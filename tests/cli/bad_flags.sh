#!/usr/bin/env bash
# Bad flags fail fast: one line on stderr, non-zero exit, before any work.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
expect_error() {
  local want=$1; shift
  local start=$(date +%s%N)
  "$kiln" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  local lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$tmp/err" || [ -s "$tmp/out" ]; then
    echo "FAIL: kiln $* -> rc=$rc, stderr ($lines lines):"; cat "$tmp/err"; fails=$((fails+1))
  else
    echo "ok (${ms} ms): $(cat "$tmp/err")"
  fi
}
expect_error "does not divide --hidden-size" train --hidden-size 100 --num-attention-heads 3
expect_error "not divisible by --micro-batch-size" train --micro-batch-size 3 --global-batch-size 8
expect_error "--load $tmp/nope does not exist and --exit-on-missing-checkpoint" train --load "$tmp/nope" \
  --exit-on-missing-checkpoint
mkdir -p "$tmp/garbled" && echo "banana" > "$tmp/garbled/latest_checkpointed_iteration.txt"
expect_error "garbled" train --load "$tmp/garbled"
mkdir -p "$tmp/corrupt/iter_0000005" && echo 5 > "$tmp/corrupt/latest_checkpointed_iteration.txt"
printf 'not a safetensors file' > "$tmp/corrupt/iter_0000005/model.safetensors"
echo '{}' > "$tmp/corrupt/iter_0000005/meta.json"
printf 'x' > "$tmp/corrupt/iter_0000005/optimizer.safetensors"
expect_error "corrupt" train --load "$tmp/corrupt"
expect_error "unknown flag --num-layer" train --num-layer 2
expect_error "expects an integer" train --num-layers two
expect_error "no backend 'nosuch'" train --backend nosuch --train-iters 1
exit $fails
