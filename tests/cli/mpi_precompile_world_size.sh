#!/usr/bin/env bash
# `kiln precompile --world-size N` builds every rank's graphs on one machine,
# without MPI, so that a real `mpirun -np N kiln train ... --require-precompiled`
# compiles nothing on any rank (--require-precompiled fails a rank at its first
# compile):
#   - DP=2 x TP=2 with --use-distributed-optimizer, whose optimizer graph is
#     sharded by the data-parallel size: without --world-size the cache holds
#     one replica's graphs and the run fails naming the missing graph; with
#     it every rank's every unit is a cache hit;
#   - TP=2 x PP=2: each pipeline stage's graphs;
#   - a world size that does not fit fails with train's own one line.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --micro-batch-size 2
       --global-batch-size 8 --train-iters 2 --log-interval 1 --num-threads 1 --tensor-model-parallel-size 2)
dp_tp=("${model[@]}" --use-distributed-optimizer)
fail() { echo "FAIL: $*" >&2; exit 1; }
stat_of() { grep "^$1: " "$2" | sed 's/.*: //'; }  # stat_of NAME `kiln cache stats` output

# One replica's graphs (the default world, TP x PP ranks) do not cover DP=2.
"$kiln" precompile "${dp_tp[@]}" --cache-dir "$tmp/replica" --num-parallel 2 >"$tmp/replica.log" 2>&1 ||
  { cat "$tmp/replica.log"; fail "precompile of one replica failed"; }
if mpi 4 "$kiln" train "${dp_tp[@]}" --cache-dir "$tmp/replica" --require-precompiled >"$tmp/miss.log" 2>&1; then
  fail "DP=2 ran from one replica's graphs: the sharded optimizer graph must miss"
fi
grep -q "require-precompiled: graph [0-9a-f]* is not in the compile cache .*--world-size N" "$tmp/miss.log" ||
  { cat "$tmp/miss.log"; fail "the miss does not name the graph and --world-size"; }

# Every rank's graphs from one process.
"$kiln" precompile "${dp_tp[@]}" --world-size 4 --cache-dir "$tmp/cache" --num-parallel 2 --json \
  >"$tmp/pre.json" 2>"$tmp/pre.log" || { cat "$tmp/pre.log"; fail "precompile --world-size 4 failed"; }
grep "^precompile: 4 ranks\|unique after" "$tmp/pre.log"
line=$(grep "^precompile: 4 ranks (2 data-parallel x 2 tensor-parallel x 1 pipeline-parallel) run" "$tmp/pre.log") ||
  { cat "$tmp/pre.log"; fail "no summary of the 4 ranks"; }
rank_units=$(echo "$line" | sed 's/.*graphs (\([0-9]*\) compile units).*/\1/')
[ "$(grep -c "^Total failed compilations: 0" "$tmp/pre.log")" = 1 ] || fail "failed compilations"
grep -q "\"rank_units\":$rank_units[,}]" "$tmp/pre.json" && grep -q '"ranks":4[,}]' "$tmp/pre.json" ||
  { cat "$tmp/pre.json"; fail "the JSON summary does not count the 4 ranks' units"; }
"$kiln" cache stats --cache-dir "$tmp/cache" >"$tmp/before.txt"
mpi 4 "$kiln" train "${dp_tp[@]}" --cache-dir "$tmp/cache" --require-precompiled >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; fail "mpirun -np 4 train --require-precompiled failed after precompile --world-size 4"; }
grep -q "compile cache: [0-9]* graphs from the cache (loading took [0-9.]* s), 0 compiled" "$tmp/train.log" ||
  fail "the last rank compiled something"
# Every rank logs its cache use: all of the ranks' units were hits, none a miss.
"$kiln" cache stats --cache-dir "$tmp/cache" >"$tmp/after.txt"
hits=$(($(stat_of hits "$tmp/after.txt") - $(stat_of hits "$tmp/before.txt")))
misses=$(($(stat_of misses "$tmp/after.txt") - $(stat_of misses "$tmp/before.txt")))
echo "DP=2 x TP=2: $hits cache hits and $misses misses over 4 ranks; precompile counted $rank_units units"
[ "$hits" = "$rank_units" ] && [ "$misses" = 0 ] || fail "expected $rank_units hits and no misses"

# Pipeline stages: TP=2 x PP=2.
pp=("${model[@]}" --pipeline-model-parallel-size 2)
"$kiln" precompile "${pp[@]}" --world-size 4 --cache-dir "$tmp/pp" --num-parallel 2 >"$tmp/pp_pre.log" 2>&1 ||
  { cat "$tmp/pp_pre.log"; fail "precompile of TP=2 x PP=2 failed"; }
grep -q "^precompile: 4 ranks (1 data-parallel x 2 tensor-parallel x 2 pipeline-parallel) run .* 2 distinct graph sets" \
  "$tmp/pp_pre.log" || { cat "$tmp/pp_pre.log"; fail "no per-stage summary"; }
mpi 4 "$kiln" train "${pp[@]}" --cache-dir "$tmp/pp" --require-precompiled >"$tmp/pp_train.log" 2>&1 ||
  { cat "$tmp/pp_train.log"; fail "TP=2 x PP=2 train --require-precompiled failed after precompile"; }
echo "TP=2 x PP=2: every rank started from the cache"

# Layouts that do not fit: train's words, with precompile's way to set the size.
status=0
"$kiln" precompile "${model[@]}" --world-size 3 --cache-dir "$tmp/bad" >"$tmp/bad.log" 2>&1 || status=$?
[ "$status" != 0 ] &&
  grep -q "tensor-model-parallel-size 2 does not divide the 3 ranks of this job; launch a multiple of it (--world-size N)" \
    "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "--world-size 3 with TP=2 was not refused in one line"; }
status=0
"$kiln" precompile "${model[@]}" --world-size 0 --cache-dir "$tmp/bad" >"$tmp/zero.log" 2>&1 || status=$?
[ "$status" != 0 ] && grep -q "world-size must be at least 1" "$tmp/zero.log" ||
  { cat "$tmp/zero.log"; fail "--world-size 0 was not refused"; }
[ ! -e "$tmp/bad" ] || fail "a refused precompile created its cache"
echo "precompile --world-size: every rank of DP x TP and TP x PP layouts precompiled from one process"
