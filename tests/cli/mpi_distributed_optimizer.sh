#!/usr/bin/env bash
# --use-distributed-optimizer (ZeRO-1) under a real mpirun: DP=2 follows the
# 1-process and the plain DP=2 loss trajectories over 12 steps, each rank
# holds half the AdamW moment bytes (the figure the log reports, summed over
# the buffers allocated), and checkpoints stay layout-free: saved by DP=2
# (and DP=2 x TP=2) with it, resumed by 1 process, and the reverse, each on
# the uninterrupted trajectory. With pipeline parallelism too: DP=2 x PP=2
# (4 ranks) and DP=2 x TP=2 x PP=2 (8 ranks) follow one process, and their
# checkpoints resume in one process and the reverse. With
# --overlap-grad-reduce --overlap-param-gather and small buckets, the
# reduce-scatters start during backward and the forward waits for each
# bucket's all-gather, on the same trajectory (DP=2, and DP=2 x TP=2), and
# a checkpoint saved while all-gathers are in flight resumes. Megatron's
# rules for the two flags hold.
set -euo pipefail
# Resumes that change the schedule flags (--train-iters sets Megatron's weight-decay
# steps) take the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --train-iters 12 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0 --num-threads 1)
after6() { grep -E '"iteration":([7-9]|1[0-2])[,}]' "$1"; }
moment_bytes() { sed -n 's/.*optimizer state: \([0-9]*\) bytes of AdamW moments on this rank.*/\1/p' "$1" | head -n 1; }

"$kiln" train "${common[@]}" --metrics-file "$tmp/one.jsonl" >"$tmp/one.log" 2>&1
mpi 2 "$kiln" train "${common[@]}" --metrics-file "$tmp/dp2.jsonl" >/dev/null 2>&1
mpi 2 "$kiln" train "${common[@]}" --use-distributed-optimizer --metrics-file "$tmp/zero.jsonl" \
  --check-weight-hash-across-dp-replicas-interval 12 >"$tmp/zero.log" 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/zero.jsonl" 12 "DP=2 distributed optimizer vs 1 process"
same_trajectory "$tmp/dp2.jsonl" "$tmp/zero.jsonl" 12 "DP=2 distributed optimizer vs DP=2"
grep -q "parameters identical on all 2 ranks at iteration 12" "$tmp/zero.log" ||
  { echo "no parameter check at iteration 12:"; cat "$tmp/zero.log"; exit 1; }

# With pipeline stages: each stage's data-parallel group shards its own
# parameters; the tied embedding's parts are summed over the first and last
# stage and counted once in the gradient norm.
pp=(--pipeline-model-parallel-size 2)
mpi 4 "$kiln" train "${common[@]}" "${pp[@]}" --use-distributed-optimizer --metrics-file "$tmp/zero_pp.jsonl" \
  >"$tmp/zero_pp.log" 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/zero_pp.jsonl" 12 "DP=2 x PP=2 distributed optimizer vs 1 process"
mpi 8 "$kiln" train "${common[@]}" "${pp[@]}" --tensor-model-parallel-size 2 --use-distributed-optimizer \
  --metrics-file "$tmp/zero_3d.jsonl" >"$tmp/zero_3d.log" 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/zero_3d.jsonl" 12 "DP=2 x TP=2 x PP=2 distributed optimizer vs 1 process"

one=$(moment_bytes "$tmp/one.log"); zero=$(moment_bytes "$tmp/zero.log")
[ -n "$one" ] && [ -n "$zero" ] || { echo "no moment bytes logged:"; cat "$tmp/one.log" "$tmp/zero.log"; exit 1; }
[ $((2 * zero)) = "$one" ] || { echo "moment bytes per rank: $zero with DP=2, $one in 1 process (not half)"; exit 1; }
echo "AdamW moments per rank: $one bytes in 1 process, $zero with DP=2 and the distributed optimizer"

"$kiln" train "${common[@]}" --train-iters 6 --lr-decay-iters 12 --save "$tmp/one_ckpt" >/dev/null 2>&1
after6 "$tmp/one.jsonl" >"$tmp/one_after6.jsonl"
for layout in "2 DP=2" "4 DP=2xTP=2 --tensor-model-parallel-size 2" \
  "8 DP=2xTP=2xPP=2 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"; do
  read -r -a args <<<"$layout"
  ranks=${args[0]}; extra=("${args[@]:2}")
  name="${args[1]} with the distributed optimizer"
  mpi "$ranks" "$kiln" train "${common[@]}" "${extra[@]}" --use-distributed-optimizer --train-iters 6 \
    --lr-decay-iters 12 --save "$tmp/ckpt$ranks" >/dev/null 2>&1
  "$kiln" train "${common[@]}" --load "$tmp/ckpt$ranks" --override-opt_param-scheduler --metrics-file "$tmp/from$ranks.jsonl" >/dev/null 2>&1
  same_trajectory "$tmp/one_after6.jsonl" "$tmp/from$ranks.jsonl" 6 "saved by $name, resumed by 1 process"
  mpi "$ranks" "$kiln" train "${common[@]}" "${extra[@]}" --use-distributed-optimizer --load "$tmp/one_ckpt" --override-opt_param-scheduler \
    --metrics-file "$tmp/to$ranks.jsonl" >/dev/null 2>&1
  same_trajectory "$tmp/one_after6.jsonl" "$tmp/to$ranks.jsonl" 6 "saved by 1 process, resumed by $name"
done

# The overlapped collectives: the same sums, so the same trajectory.
overlap=(--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --ddp-bucket-size 4096)
for layout in "2 DP=2" "4 DP=2xTP=2 --tensor-model-parallel-size 2"; do
  read -r -a args <<<"$layout"
  ranks=${args[0]}; extra=("${args[@]:2}")
  KILN_LOG_LEVEL=debug mpi "$ranks" "$kiln" train "${common[@]}" "${extra[@]}" "${overlap[@]}" \
    --metrics-file "$tmp/overlap$ranks.jsonl" >"$tmp/overlap$ranks.log" 2>&1
  same_trajectory "$tmp/one.jsonl" "$tmp/overlap$ranks.jsonl" 12 "${args[1]} overlapped distributed optimizer vs 1 process"
  grep -Eo "(gradient reduce-scatter|parameter all-gather): [0-9]+ of [0-9]+ buckets [a-z ]+" "$tmp/overlap$ranks.log" |
    sort | uniq -c
  # (the last rank logs) every step starts buckets during backward; every
  # step after the first waits for buckets inside its forward.
  early=$(grep -Ec "gradient reduce-scatter: [1-9][0-9]* of [0-9]+ buckets started during backward" \
    "$tmp/overlap$ranks.log" || true)
  inside=$(grep -Ec "parameter all-gather: [1-9][0-9]* of [0-9]+ buckets awaited after the forward began" \
    "$tmp/overlap$ranks.log" || true)
  [ "$early" = 12 ] && [ "$inside" = 11 ] ||
    { echo "${args[1]}: $early steps reduce-scattered during backward (want 12), $inside gathered inside the forward (want 11)"; exit 1; }
done
mpi 2 "$kiln" train "${common[@]}" "${overlap[@]}" --train-iters 6 --lr-decay-iters 12 --save "$tmp/overlap_ckpt" \
  >/dev/null 2>&1
"$kiln" train "${common[@]}" --load "$tmp/overlap_ckpt" --override-opt_param-scheduler --metrics-file "$tmp/from_overlap.jsonl" >/dev/null 2>&1
same_trajectory "$tmp/one_after6.jsonl" "$tmp/from_overlap.jsonl" 6 "saved by overlapped DP=2, resumed by 1 process"

# Megatron's rules: the all-gather overlap needs the distributed optimizer
# and the reduce overlap.
check_refused() {
  local want=$1; shift
  local status=0
  mpi 2 "$kiln" train "${common[@]}" "$@" >"$tmp/refused.log" 2>&1 || status=$?
  [ "$status" != 0 ] && grep -q "kiln: error: rank [01]: $want" "$tmp/refused.log" ||
    { echo "$* not refused clearly:"; cat "$tmp/refused.log"; exit 1; }
}
check_refused "--overlap-param-gather only supported with distributed optimizer" --overlap-grad-reduce \
  --overlap-param-gather
check_refused "Must use --overlap-param-gather with --overlap-grad-reduce" --use-distributed-optimizer \
  --overlap-param-gather
echo "overlap flags without their prerequisites refused with a one-line error"
