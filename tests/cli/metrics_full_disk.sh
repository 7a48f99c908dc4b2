#!/usr/bin/env bash
# --metrics-file on a full disk (issue 13, item 9): training goes on, one
# warning names the file and the reason, and the file ends at its last
# whole JSON line (it used to end in half a line, silently, with exit 0).
# Two ways to fill it up without filling a real disk: /dev/full (every
# write fails with ENOSPC) and a file-size limit (ulimit -f, with SIGXFSZ
# ignored, so a write stops part-way with EFBIG).
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
