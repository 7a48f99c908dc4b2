#!/usr/bin/env bash
# A full disk (issue 13, item 9; docs/OPERATIONS.md), made without filling
# a real one: /dev/full (every write fails with ENOSPC) and a file-size
# limit (ulimit -f, with SIGXFSZ ignored, so a write stops part-way with
# EFBIG).
# - --metrics-file: training goes on, one warning names the file and the
#   reason, and the file ends at its last whole JSON line (it used to end in
#   half a line, silently, with exit 0);
# - a checkpoint save: one line, non-zero exit, the previous checkpoint and
#   latest untouched, no temporaries left;
# - kiln preprocess: one line, non-zero exit, no output or temporary left;
# - kiln generate to /dev/full: one line, non-zero exit;
# - kiln precompile: each unit it could not store names the reason.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0
       --log-interval 1 --train-iters 60)
export KILN_CACHE_DIR=off  # the compile cache would hit the size limit too

"$kiln" train "${small[@]}" --metrics-file /dev/full >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "training stopped"; }
[ "$(grep -c 'warn' "$tmp/err")" = 1 ] || { cat "$tmp/err"; fail "expected exactly one warning"; }
grep -q -- "--metrics-file /dev/full: cannot write (No space left on device)" "$tmp/err" || { cat "$tmp/err"; fail "unclear warning"; }
grep -q "iteration       60/      60" "$tmp/out" || fail "training did not finish"
echo "ok: $(grep warn "$tmp/err")"

(trap '' XFSZ; ulimit -f 8; exec "$kiln" train "${small[@]}" --metrics-file "$tmp/m.jsonl") >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "training stopped at the size limit"; }
[ "$(grep -c 'warn' "$tmp/err")" = 1 ] || { cat "$tmp/err"; fail "expected exactly one warning"; }
grep -q "ends at its last whole record" "$tmp/err" || { cat "$tmp/err"; fail "the partial record was not cut off"; }
lines=$(wc -l < "$tmp/m.jsonl")
[ "$lines" -gt 0 ] && [ "$lines" -lt 60 ] || fail "$lines lines: the limit did not bite"
python3 -c "
import json, sys
data = open(sys.argv[1], 'rb').read()
assert data.endswith(b'\n'), 'the file ends inside a line'
for line in data.splitlines(): json.loads(line)
" "$tmp/m.jsonl" || fail "the metrics file holds a partial line"
echo "ok: $lines whole lines under an 8 KiB size limit, then one warning; training finished"

# TensorBoard events under the same limit: whole records only, as the
# independent reader (CRCs on every record) confirms.
(trap '' XFSZ; ulimit -f 8; exec "$kiln" train "${small[@]}" --tensorboard-dir "$tmp/tb") >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "training stopped at the size limit (TensorBoard)"; }
grep -q -- "--tensorboard-dir .*cannot write (File too large); it ends at its last whole record" "$tmp/err" ||
  { cat "$tmp/err"; fail "no TensorBoard warning"; }
events=("$tmp"/tb/events.out.tfevents.*)
python3 "$(dirname "$0")/../tools/read_tfevents.py" "${events[0]}" >"$tmp/scalars.txt" ||
  fail "the event file ends in a partial record"
echo "ok: $(grep -c . "$tmp/scalars.txt") scalars in whole TensorBoard records under the limit, then one warning"

# A checkpoint that does not fit: the previous one stays latest.
"$kiln" train "${small[@]}" --train-iters 1 --save "$tmp/ck" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "first save"; }
(trap '' XFSZ; ulimit -f 8; exec "$kiln" train "${small[@]}" --train-iters 2 --save "$tmp/ck" --load "$tmp/ck" --override-opt_param-scheduler) \
  >"$tmp/out" 2>"$tmp/err" && fail "a save that did not fit exited 0"
grep -q "^kiln: error: cannot save checkpoint .*iter_0000002: .*File too large; check free space" "$tmp/err" ||
  { cat "$tmp/err"; fail "unclear save error"; }
[ "$(cat "$tmp/ck/latest_checkpointed_iteration.txt")" = 1 ] || fail "latest moved off the good checkpoint"
[ "$(ls -A "$tmp/ck")" = "$(printf 'iter_0000001\nlatest_checkpointed_iteration.txt')" ] ||
  { ls -A "$tmp/ck"; fail "the failed save left files"; }
echo "ok: $(grep 'kiln: error' "$tmp/err")"

# kiln generate's text to a full disk: one line and a non-zero exit (it
# exited 0 with the text lost).
"$kiln" generate --load "$tmp/ck" --prompt "The " --max-new-tokens 20 >/dev/full 2>"$tmp/err" &&
  fail "generate to /dev/full exited 0"
[ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^kiln: error: cannot write the generated text to stdout: No space left" "$tmp/err" ||
  { cat "$tmp/err"; fail "unclear generate error"; }
echo "ok: $(cat "$tmp/err")"

# kiln precompile into a cache that hits the limit: every unit that could not
# be stored says why, as kiln train's warning does (N57: the reason was lost).
(trap '' XFSZ; ulimit -f 8; KILN_CACHE_DIR=$tmp/pcache exec "$kiln" precompile "${small[@]}" --train-iters 2) \
  >"$tmp/out" 2>&1 && { cat "$tmp/out"; fail "precompile into a full cache exited 0"; }
failed=$(grep -c "FAILED .*compiled, but the entry could not be stored" "$tmp/out")
[ "$failed" -gt 0 ] || { cat "$tmp/out"; fail "no unit failed to be stored under the limit"; }
[ "$(grep -c "FAILED .*compiled, but the entry could not be stored: cannot write .*: File too large$" "$tmp/out")" = "$failed" ] ||
  { cat "$tmp/out"; fail "a FAILED line does not give the reason"; }
[ -z "$(find "$tmp/pcache" -name '*.tmp.*')" ] || fail "precompile left temporaries in the cache"
echo "ok: $failed units: $(grep -m1 -o 'compiled, but the entry could not be stored: cannot write .*' "$tmp/out" | sed 's|write .*:|write ...:|')"

shared=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
if [ ! -f "$shared/gpt2/gpt2-vocab.json" ]; then
  echo "SKIPPED the preprocess part: needs $shared/gpt2 (../shared beside the project)"
  exit 0
fi
for i in $(seq 3000); do printf '{"text": "document %d of a corpus that does not fit in the limit"}\n' "$i"; done > "$tmp/in.jsonl"
mkdir "$tmp/pre"
(trap '' XFSZ; ulimit -f 8; exec "$kiln" preprocess --input "$tmp/in.jsonl" --output-prefix "$tmp/pre/p" \
   --tokenizer-type GPT2BPETokenizer --vocab-file "$shared/gpt2/gpt2-vocab.json" \
   --merge-file "$shared/gpt2/gpt2-merges.txt") >"$tmp/out" 2>"$tmp/err" && fail "preprocess past the limit exited 0"
[ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^kiln: error: cannot write .*File too large" "$tmp/err" ||
  { cat "$tmp/err"; fail "unclear preprocess error"; }
[ -z "$(ls -A "$tmp/pre")" ] || { ls -A "$tmp/pre"; fail "preprocess left files"; }
echo "ok: $(cat "$tmp/err")"
