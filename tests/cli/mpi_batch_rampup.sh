#!/usr/bin/env bash
# --rampup-batch-size under a real mpirun: the batch of each step (4 4 8 12,
# then 16 once more than 24 samples are consumed) follows the consumed
# samples on every rank, so the step's micro-batches per rank change (1 to 4
# under DP=2, 2 to 8 under PP=2, whole rounds of 2 under the interleaved
# schedule) and the loss trajectory equals one process within 1e-5:
#   - DP=2, DP=2 with --use-distributed-optimizer --overlap-grad-reduce;
#   - PP=2 (1F1B) and interleaved PP=2 (2 chunks per rank);
#   - the interleaved schedule refuses a ramp step that is not whole rounds.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --log-interval 1 --eval-iters 0 --num-threads 1 --lr-warmup-samples 8
        --global-batch-size 16 --train-samples 96)
ramp=(--rampup-batch-size 4 4 24)
fail() { echo "FAIL: $*"; exit 1; }
batches() { grep -o 'global batch size: *[0-9]*' "$1" | awk '{ printf "%s ", $4 }'; }

"$kiln" train "${common[@]}" "${ramp[@]}" --metrics-file "$tmp/one.jsonl" >"$tmp/one.log" 2>&1 || { cat "$tmp/one.log"; fail "1 process"; }
[ "$(batches "$tmp/one.log")" = "4 4 8 12 16 16 16 16 " ] || fail "1-process global batch sizes: $(batches "$tmp/one.log")"

check() {  # NAME RANKS FLAGS...
  local name=$1 n=$2; shift 2
  mpi "$n" "$kiln" train "${common[@]}" "${ramp[@]}" "$@" --metrics-file "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1 ||
    { cat "$tmp/$name.log"; fail "$name"; }
  [ "$(batches "$tmp/$name.log")" = "4 4 8 12 16 16 16 16 " ] || fail "$name global batch sizes: $(batches "$tmp/$name.log")"
  same_trajectory "$tmp/one.jsonl" "$tmp/$name.jsonl" 8 "ramp $name vs 1 process" || fail "$name trajectory"
}
check dp2 2
check dp2-distopt 2 --use-distributed-optimizer --overlap-grad-reduce
check pp2 2 --pipeline-model-parallel-size 2
check pp2-interleaved 2 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1

if mpi 2 "$kiln" train "${common[@]}" --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 \
  --rampup-batch-size 2 2 24 >/dev/null 2>"$tmp/err"; then
  fail "interleaved schedule accepted a ramp step of 1 micro-batch"
fi
grep "a step of 1 microbatches is not divisible by pipeline-model-parallel-size (2)" "$tmp/err" >/dev/null ||
  { cat "$tmp/err"; fail "wrong error for the interleaved ramp"; }
echo "ok: the interleaved schedule refuses a ramp step of 1 micro-batch"
