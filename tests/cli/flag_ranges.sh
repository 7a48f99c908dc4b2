#!/usr/bin/env bash
# Number flags are checked against their meaning when parsed (issue 13,
# items 2, 13, 16 and 19): NaN, infinities and out-of-range values fail in
# one line naming the flag, before any work. A NaN passes every `x <= 0`
# check, so each of these used to be accepted: a NaN timeout turned off the
# dead-rank watchdog, NaN AdamW settings wrote NaN into every weight, and
# `cache gc --max-size inf` emptied the cache.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
expect_error() {
  local want=$1; shift
  "$kiln" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$tmp/err" || [ -s "$tmp/out" ]; then
    echo "FAIL: kiln $* -> rc=$rc, stderr ($lines lines):"; cat "$tmp/err"; fails=$((fails+1))
  else
    echo "ok: $(cat "$tmp/err")"
  fi
}
# F3 (findings 2026-11-27): --train-iters 0 was blamed on --lr-decay-iters.
expect_error "--train-iters 0 trains nothing; give --train-iters N with N > 0" train --train-iters 0
# 2. durations
expect_error "--distributed-timeout-minutes expects a finite number" train --train-iters 0 --distributed-timeout-minutes nan
expect_error "--distributed-timeout-minutes must be in (0, 525600]" train --train-iters 0 --distributed-timeout-minutes 1e300
expect_error "--distributed-timeout-minutes must be in (0, 525600]" train --train-iters 0 --distributed-timeout-minutes 0
expect_error "--exit-duration-in-mins expects a finite number" train --train-iters 0 --exit-duration-in-mins nan
expect_error "--exit-duration-in-mins must be in \[0, 525600\]" train --train-iters 0 --exit-duration-in-mins 1e300
expect_error "--exit-duration-in-mins expects a finite number" train --train-iters 0 --exit-duration-in-mins 1e999
# 16. hyperparameters, with PyTorch AdamW's ranges
expect_error "--adam-beta1 expects a finite number" train --train-iters 0 --adam-beta1 nan
expect_error "--adam-beta1 must be in \[0, 1), got 1.5" train --train-iters 0 --adam-beta1 1.5
expect_error "--adam-beta2 must be in \[0, 1), got 1" train --train-iters 0 --adam-beta2 1
expect_error "--adam-eps must be at least 0, got -1" train --train-iters 0 --adam-eps -1
expect_error "--weight-decay expects a finite number" train --train-iters 0 --weight-decay nan
expect_error "--weight-decay must be at least 0, got -5" train --train-iters 0 --weight-decay -5
expect_error "--init-method-std expects a finite number" train --train-iters 0 --init-method-std nan
expect_error "--clip-grad expects a finite number" train --train-iters 0 --clip-grad nan
expect_error "--lr-warmup-fraction expects a finite number" train --train-iters 0 --lr-warmup-fraction nan
expect_error "--lr expects a finite number" train --train-iters 0 --lr inf
expect_error "--lr must be at least 0" train --train-iters 0 --lr -0.1
# 19. sampling
expect_error "--temperature expects a finite number" generate --load "$tmp" --temperature nan
expect_error "--temperature must be at least 0, got -1" generate --load "$tmp" --temperature -1
expect_error "--top-k must be at least 0" generate --load "$tmp" --top-k -3
# 13. cache gc sizes
for bad in inf nan; do
  expect_error "--max-size '$bad' is not a size" cache gc --cache-dir "$tmp/cache" --max-size "$bad"
done
for huge in 1e30 18446744073709551615 16777216T; do
  case $huge in *T) want="is not a size" ;; *) want="is larger than 16 EiB" ;; esac
  expect_error "$want" cache gc --cache-dir "$tmp/cache" --max-size "$huge"
done
expect_error "--max-age 'nan' is not a duration" cache gc --cache-dir "$tmp/cache" --max-age nan
exit $fails
