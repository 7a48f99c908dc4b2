#!/usr/bin/env bash
# Ranks launched with different flags (issue 13, item 17) used to diverge
# silently and exit 0 (another --seed) or fail inside MPI with
# MPI_ERR_TRUNCATE (another model size). At start-up the ranks compare their
# flags, and each names the flags that differ in one line; the job ends
# non-zero before training. Per-rank flags (--num-threads) may differ.
set -uo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2
        --global-batch-size 4 --train-iters 2 --eval-iters 0 --log-interval 1)
mpmd() { mpirun "${mpi_flags[@]}" -np 1 "$kiln" train "${common[@]}" $1 : -np 1 "$kiln" train "${common[@]}" $2; }
# mpi.sh's -x ASAN_OPTIONS=...:detect_leaks=0 reaches only the first app
# context of an MPMD launch; the ranks inherit this environment on one host.
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"

timeout 120 bash -c "$(declare -f mpmd); $(declare -p mpi_flags common); kiln=$kiln; mpmd '--seed 1' '--seed 2'" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$tmp/err"; fail "ranks with different --seed: exit $rc"; }
grep -q "rank 0 was launched with other flags than the rest of the job: --seed is '1' here but differs on rank 1" \
  "$tmp/err" || { cat "$tmp/err"; fail "rank 0 does not name --seed"; }
grep -q "iteration " "$tmp/out" && fail "training started"
echo "ok: $(grep -o 'rank 0 was launched.*' "$tmp/err" | head -1)"

timeout 120 bash -c "$(declare -f mpmd); $(declare -p mpi_flags common); kiln=$kiln; mpmd '--hidden-size 32 --lr 1e-3' '--hidden-size 64 --lr 1e-3'" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$tmp/err"; fail "ranks with different --hidden-size: exit $rc"; }
grep -q -- "--hidden-size is '64' here but differs on rank 0" "$tmp/err" || { cat "$tmp/err"; fail "rank 1 does not name --hidden-size"; }
grep -q "MPI_ERR_TRUNCATE" "$tmp/err" && fail "a raw MPI error"
echo "ok: $(grep -o 'rank 1 was launched.*' "$tmp/err" | head -1)"

timeout 120 bash -c "$(declare -f mpmd); $(declare -p mpi_flags common); kiln=$kiln; mpmd '--num-threads 1' '--num-threads 2'" \
  >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "per-rank --num-threads was refused"; }
echo "ok: ranks may differ in --num-threads"
