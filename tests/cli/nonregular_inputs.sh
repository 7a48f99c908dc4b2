#!/usr/bin/env bash
# Every kind of input file kiln reads, replaced by a FIFO, a symlink to
# /dev/zero and (where a size bound applies) a huge sparse file (issue 36,
# findings N25, N26, N64, N98, N99, N102). Before, each one blocked in
# open() or read without bound. Now: a non-zero exit with one error line
# naming the file, or, for the caches kiln rebuilds (the dataset index
# cache, usage.log), a warning and a run that goes on. Every command runs
# under `timeout`, so a regression fails here instead of hanging.
# Usage: nonregular_inputs.sh <path-to-kiln>
set -uo pipefail
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# A private cache: its usage.log becomes a FIFO below.
export KILN_CACHE_DIR=$tmp/cache
model=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8 --micro-batch-size 1
       --global-batch-size 1 --eval-iters 0 --log-interval 1000 --num-threads 1)

as_fifo() { rm -rf "$1" && mkfifo "$1"; }
as_zero() { rm -rf "$1" && ln -s /dev/zero "$1"; }
as_huge() { rm -rf "$1" && truncate -s "$2" "$1"; }

# $1: a name, $2: text the one error line ("kiln: error: ...") must hold,
# rest: the command.
expect_refused() {
  local name=$1 text=$2
  shift 2
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -ne 124 ] || fail "$name: hung"
  [ $rc -ne 0 ] || fail "$name: exit 0"
  # Info lines may come first; the error is one line, the last.
  [ "$(grep -ci error "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$name: not one error line"; }
  local line
  line=$(tail -1 "$tmp/err")
  [[ $line == "kiln: error: "*"$text"* ]] || fail "$name: '$line' does not hold '$text'"
  echo "ok: $name: $line"
}
# $1: a name, $2: text of the warning, rest: the command, which must succeed.
expect_warned() {
  local name=$1 text=$2
  shift 2
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -ne 124 ] || fail "$name: hung"
  [ $rc -eq 0 ] || { cat "$tmp/err"; fail "$name: exit $rc"; }
  grep -Fq -- "$text" "$tmp/err" "$tmp/out" || { cat "$tmp/err"; fail "$name: no warning holding '$text'"; }
  echo "ok: $name: warned and went on"
}

# Checkpoint files (N98).
timeout 120 "$kiln" train "${model[@]}" --train-iters 1 --save "$tmp/ck" >/dev/null 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "the reference run failed"; }
it=iter_0000001
resume=("$kiln" train "${model[@]}" --train-iters 2 --override-opt_param-scheduler --load "$tmp/c")
fresh() { rm -rf "$tmp/c" && cp -r "$tmp/ck" "$tmp/c"; }
fresh && as_fifo "$tmp/c/$it/model.safetensors"
expect_refused "FIFO model.safetensors" "$tmp/c/$it/model.safetensors: is a FIFO, not a regular file" "${resume[@]}"
expect_refused "export of a FIFO model.safetensors" "$tmp/c/$it/model.safetensors: is a FIFO, not a regular file" \
  "$kiln" export --load "$tmp/c" --format hf --output "$tmp/never"
fresh && as_zero "$tmp/c/$it/model.safetensors"
expect_refused "/dev/zero model.safetensors" "$tmp/c/$it/model.safetensors: is a character device" "${resume[@]}"
fresh && as_fifo "$tmp/c/$it/optimizer.safetensors"
expect_refused "FIFO optimizer.safetensors" "$tmp/c/$it/optimizer.safetensors: is a FIFO" "${resume[@]}"
for f in meta.json; do
  fresh && as_fifo "$tmp/c/$it/$f"
  expect_refused "FIFO $f" "cannot read checkpoint $tmp/c/$it/$f: is a FIFO" "${resume[@]}"
  fresh && as_zero "$tmp/c/$it/$f"
  expect_refused "/dev/zero $f" "cannot read checkpoint $tmp/c/$it/$f: is a character device" "${resume[@]}"
  fresh && as_huge "$tmp/c/$it/$f" 17M
  expect_refused "huge $f" "cannot read checkpoint $tmp/c/$it/$f: is 17825792 bytes, over the" "${resume[@]}"
done
latest=$tmp/c/latest_checkpointed_iteration.txt
fresh && as_fifo "$latest"
expect_refused "FIFO latest" "cannot read checkpoint pointer $latest: is a FIFO" "${resume[@]}"
fresh && as_zero "$latest"
expect_refused "/dev/zero latest" "cannot read checkpoint pointer $latest: is a character device" "${resume[@]}"
fresh && as_huge "$latest" 1G
expect_refused "huge latest" "cannot read checkpoint pointer $latest: is 1073741824 bytes, over the 4096-byte bound" \
  "${resume[@]}"

# Megatron data files (N99) and the dataset index cache (N64).
awk 'BEGIN { srand(3); for (d = 0; d < 60; d++) { s = ""; for (i = 0; i < 20; i++) s = s (i ? " " : "") int(rand() * 50);
       print "{\"text\": \"" s "\"}" } }' >"$tmp/ids.jsonl"
tok=(--tokenizer-type NullTokenizer --vocab-size 50)
timeout 60 "$kiln" preprocess --input "$tmp/ids.jsonl" --output-prefix "$tmp/d" "${tok[@]}" --workers 1 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "preprocess failed"; }
mkdir "$tmp/data"
data=("$kiln" train "${model[@]}" --train-iters 1 --data-path "$tmp/data/d_text_document" "${tok[@]}" --split 100,0,0)
# rm first: cp would write into a FIFO left by the case before.
restore_data() { rm -f "$tmp"/data/d_text_document.* && cp "$tmp"/d_text_document.* "$tmp/data/"; }
for ext in idx bin; do
  restore_data
  as_fifo "$tmp/data/d_text_document.$ext"
  expect_refused "FIFO .$ext" "Megatron data file $tmp/data/d_text_document.$ext: is a FIFO" "${data[@]}"
  restore_data
  as_zero "$tmp/data/d_text_document.$ext"
  expect_refused "/dev/zero .$ext" "Megatron data file $tmp/data/d_text_document.$ext: is a character device" \
    "${data[@]}"
done
restore_data
timeout 60 "${data[@]}" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "training on the data failed"; }
kidx=$(find "$tmp/data/cache" -name '*train.kidx' | head -1)
[ -n "$kidx" ] || fail "no dataset index cache was written"
as_fifo "$kidx"
expect_warned "FIFO index cache" "index cache $kidx is a FIFO, not a regular file; rebuilding it" "${data[@]}"
[ -f "$kidx" ] && [ ! -p "$kidx" ] || fail "the FIFO index cache was not replaced"
as_zero "$kidx"
expect_warned "/dev/zero index cache" "index cache $kidx is a character device" "${data[@]}"
as_huge "$kidx" 8G
expect_warned "huge index cache" "index cache $kidx does not match its header; rebuilding it" "${data[@]}"

# The compile cache's usage.log (N102): skipped when appending, refused when
# `kiln cache stats` reads it.
usage=$KILN_CACHE_DIR/usage.log
[ -f "$usage" ] || fail "no usage.log in $KILN_CACHE_DIR"
as_fifo "$usage"
timeout 60 "$kiln" train "${model[@]}" --train-iters 1 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -ne 124 ] || fail "kiln train hung on a FIFO usage.log"
[ $rc -eq 0 ] || { cat "$tmp/err"; fail "kiln train exited $rc with a FIFO usage.log"; }
echo "ok: a FIFO usage.log does not stop kiln train"
expect_refused "cache stats of a FIFO usage.log" "usage log $usage: is a FIFO" "$kiln" cache stats
as_zero "$usage"
expect_refused "cache stats of a /dev/zero usage.log" "usage log $usage: is a character device" "$kiln" cache stats
rm -f "$usage"

# kiln import's inputs (N25, N26): config.json, model.safetensors, and a
# sharded model's index and shards.
timeout 60 "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/ex" >/dev/null || fail "export failed"
timeout 60 "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/exs" --max-shard-size 4KiB >/dev/null ||
  fail "sharded export failed"
shard=$(find "$tmp/exs" -name 'model-00001-of-*.safetensors')
[ -f "$tmp/exs/model.safetensors.index.json" ] && [ -n "$shard" ] || fail "the sharded export has no index or shard"
import() {
  rm -rf "$tmp/i" "$tmp/saved" && cp -r "$1" "$tmp/i"
  shift
  "$@"
}
run_import=("$kiln" import --format hf --input "$tmp/i" --save "$tmp/saved")
import "$tmp/ex" as_fifo "$tmp/i/config.json"
expect_refused "FIFO config.json" "--input $tmp/i/config.json: is a FIFO" "${run_import[@]}"
import "$tmp/ex" as_zero "$tmp/i/config.json"
expect_refused "/dev/zero config.json" "--input $tmp/i/config.json: is a character device" "${run_import[@]}"
import "$tmp/ex" as_huge "$tmp/i/config.json" 1G
expect_refused "huge config.json" "--input $tmp/i/config.json: is 1073741824 bytes, over the" "${run_import[@]}"
import "$tmp/ex" as_fifo "$tmp/i/model.safetensors"
expect_refused "FIFO import model.safetensors" "$tmp/i/model.safetensors: is a FIFO" "${run_import[@]}"
import "$tmp/ex" as_zero "$tmp/i/model.safetensors"
expect_refused "/dev/zero import model.safetensors" "$tmp/i/model.safetensors: is a character device" \
  "${run_import[@]}"
import "$tmp/exs" as_fifo "$tmp/i/model.safetensors.index.json"
expect_refused "FIFO index.json" "--input $tmp/i/model.safetensors.index.json: is a FIFO" "${run_import[@]}"
import "$tmp/exs" as_fifo "$tmp/i/$(basename "$shard")"
expect_refused "FIFO shard" "$tmp/i/$(basename "$shard"): is a FIFO" "${run_import[@]}"

# kiln preprocess --input: a device is refused; a pipe and a named FIFO
# with a writer stay inputs (a documented stream).
ln -s /dev/zero "$tmp/zero.jsonl"
expect_refused "/dev/zero --input" "--input $tmp/zero.jsonl: is a character device, not a regular file or a pipe" \
  "$kiln" preprocess --input "$tmp/zero.jsonl" --output-prefix "$tmp/z" "${tok[@]}"
timeout 60 "$kiln" preprocess --input /dev/stdin --output-prefix "$tmp/p" "${tok[@]}" --workers 1 \
  <"$tmp/ids.jsonl" 2>"$tmp/err" || { cat "$tmp/err"; fail "preprocess from a redirected stdin failed"; }
cat "$tmp/ids.jsonl" | timeout 60 "$kiln" preprocess --input /dev/stdin --output-prefix "$tmp/q" "${tok[@]}" \
  --workers 1 2>"$tmp/err" || { cat "$tmp/err"; fail "preprocess from a pipe failed"; }
mkfifo "$tmp/named.jsonl"
# The writer is already waiting when kiln opens the FIFO: kiln once opened
# it twice, and a writer served by the first descriptor lost its data to
# that descriptor's close, so the second open waited forever (about half of
# these runs hung). -k: in case a stalled read ever outlives SIGTERM again
# (it did before N109's fix; cli.preprocess_signals checks that).
cat "$tmp/ids.jsonl" >"$tmp/named.jsonl" &
sleep 0.5
timeout -k 5 60 "$kiln" preprocess --input "$tmp/named.jsonl" --output-prefix "$tmp/n" "${tok[@]}" --workers 1 \
  2>"$tmp/err" || { cat "$tmp/err"; kill %1 2>/dev/null; fail "preprocess from a named FIFO failed or hung"; }
wait
cmp "$tmp/q_text_document.bin" "$tmp/d_text_document.bin" && cmp "$tmp/n_text_document.bin" "$tmp/d_text_document.bin" ||
  fail "preprocess from a pipe wrote other tokens"
echo "ok: preprocess reads a pipe and a named FIFO, refuses /dev/zero"
