#!/usr/bin/env bash
# Data parallelism under a real mpirun: 2 ranks with global batch 8 follow
# the same loss trajectory as 1 process with global batch 8 over 20 steps
# (float rounding only: the gradient sums are added in another order), and
# the parameters are bit-identical on both ranks at the end. Only the last
# rank prints Megatron's lines. Small buckets: several all-reduces per step.
# With --overlap-grad-reduce they start during backward, on the same trajectory.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --train-iters 20 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0 --num-threads 1)

"$kiln" train "${common[@]}" --metrics-file "$tmp/one.jsonl" >/dev/null
mpi 2 "$kiln" train "${common[@]}" --metrics-file "$tmp/two.jsonl" \
  --check-weight-hash-across-dp-replicas-interval 10 --ddp-bucket-size 4096 >"$tmp/two.log"

same_trajectory "$tmp/one.jsonl" "$tmp/two.jsonl" 20 "DP=2 vs 1 process"
grep -q "parameters identical on all 2 ranks at iteration 20" "$tmp/two.log" ||
  { echo "no parameter check at iteration 20:"; cat "$tmp/two.log"; exit 1; }
lines=$(grep -c "iteration .*/ *20 |" "$tmp/two.log")
[ "$lines" = 20 ] || { echo "expected 20 iteration lines (last rank only), got $lines"; exit 1; }
echo "parameters identical on both ranks; one rank logged"

# --overlap-grad-reduce: each bucket's all-reduce starts during the last
# micro-batch's backward once its gradients are final; the sums, and so the
# trajectory, are those of the run without it.
KILN_LOG_LEVEL=debug mpi 2 "$kiln" train "${common[@]}" --metrics-file "$tmp/overlap.jsonl" --ddp-bucket-size 4096 \
  --overlap-grad-reduce >"$tmp/overlap.log" 2>&1
same_trajectory "$tmp/two.jsonl" "$tmp/overlap.jsonl" 20 "DP=2 with --overlap-grad-reduce vs without"
grep -Eo "gradient all-reduce: [0-9]+ of [0-9]+ buckets started during backward" "$tmp/overlap.log" | sort | uniq -c
early=$(grep -Ec "gradient all-reduce: [1-9][0-9]* of [0-9]+ buckets started during backward" "$tmp/overlap.log" || true)
# (the last rank logs, as it prints Megatron's lines)
[ "$early" = 20 ] || { echo "expected 20 steps with buckets started during backward, got $early"; exit 1; }

# A user error under mpirun: one line per rank, the job ends non-zero at once.
status=0
mpi 2 "$kiln" train "${common[@]}" --global-batch-size 6 >"$tmp/bad.log" 2>&1 || status=$?
[ "$status" != 0 ] || { echo "indivisible global batch accepted under DP=2"; exit 1; }
grep -q "kiln: error: rank [01]: --global-batch-size 6 is not divisible by --micro-batch-size 2 x data-parallel size 2" \
  "$tmp/bad.log" || { echo "no clear error:"; cat "$tmp/bad.log"; exit 1; }
echo "bad flags under DP=2: exit $status with a one-line error"
