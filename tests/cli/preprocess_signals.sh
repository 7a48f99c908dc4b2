#!/usr/bin/env bash
# kiln preprocess and signals (issue 13, item 14): SIGTERM or SIGINT stops
# the run in one line with a non-zero exit and leaves no *.tmp.PID file and
# no output; after a kill -9 (no cleanup possible), the next run with the
# same --output-prefix removes the dead run's temporaries, and keeps those
# of a live process and files that only look similar.
# The input is a FIFO fed without end, so the run is certainly still going
# when it is signalled (no timing assumption). Skipped without ../shared.
set -uo pipefail
kiln=$1
shared=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
if [ ! -f "$shared/gpt2/gpt2-vocab.json" ] || [ ! -f "$shared/gpt2/gpt2-merges.txt" ]; then
  echo "SKIPPED: needs $shared/gpt2 (../shared beside the project)"
  exit 0
fi
tmp=$(mktemp -d)
run= feeder=
trap '[ -n "$run" ] && kill -9 $run 2>/dev/null; [ -n "$feeder" ] && kill $feeder 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
tok=(--tokenizer-type GPT2BPETokenizer --vocab-file "$shared/gpt2/gpt2-vocab.json"
     --merge-file "$shared/gpt2/gpt2-merges.txt")

# start_endless PREFIX: kiln preprocess on endless input, in the background
# ($run), once its temporaries exist.
start_endless() {
  rm -f "$tmp/in"; mkfifo "$tmp/in"
  yes '{"text": "the quick brown fox jumps over the lazy dog"}' > "$tmp/in" 2>/dev/null &
  feeder=$!
  "$kiln" preprocess --input "$tmp/in" --output-prefix "$1" "${tok[@]}" --workers 2 >"$tmp/out" 2>"$tmp/err" &
  run=$!
  for _ in $(seq 1200); do
    [ -e "$1_text_document.bin.tmp.$run" ] && break
    kill -0 $run 2>/dev/null || break
    sleep 0.1
  done
  [ -e "$1_text_document.bin.tmp.$run" ] || { cat "$tmp/err"; fail "preprocess never created its temporaries"; }
}
finish() { wait $run 2>/dev/null; rc=$?; run=; kill $feeder 2>/dev/null; wait $feeder 2>/dev/null; feeder=; }

for sig in TERM INT; do
  start_endless "$tmp/s$sig"
  kill -$sig $run
  finish
  [ $rc -ne 0 ] || fail "SIG$sig: preprocess exited 0"
  [ $rc -lt 128 ] || fail "SIG$sig: preprocess died of the signal (exit $rc) instead of cleaning up"
  grep -v '^Processed ' "$tmp/err" > "$tmp/err.lines"
  [ "$(wc -l < "$tmp/err.lines")" -eq 1 ] || { cat "$tmp/err"; fail "SIG$sig: expected one line"; }
  grep -q "stopped by SIG$sig; removed its temporary files" "$tmp/err.lines" ||
    { cat "$tmp/err.lines"; fail "SIG$sig: the line does not say what happened"; }
  left=$(ls "$tmp" | grep "^s$sig" || true)
  [ -z "$left" ] || fail "SIG$sig left: $left"
  echo "ok: $(cat "$tmp/err.lines")"
done

# kill -9 cannot be caught: the temporaries stay until the next run.
start_endless "$tmp/k"
dead=$run
kill -9 $run
finish
ls "$tmp"/k_text_document.*.tmp.$dead >/dev/null 2>&1 || fail "kill -9 left no temporaries to reap (test broken?)"
echo keep > "$tmp/k_text_document.bin.tmp.$$"       # a live process's (this shell)
echo keep > "$tmp/k_text_document.bin.tmp.backup"   # not a pid
printf '{"text": "hello"}\n' > "$tmp/small.jsonl"
"$kiln" preprocess --input "$tmp/small.jsonl" --output-prefix "$tmp/k" "${tok[@]}" --workers 1 >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "the run after kill -9 failed"; }
grep -q "removed 3 temporaries left by an interrupted run" "$tmp/err" || { cat "$tmp/err"; fail "no reaping reported"; }
! ls "$tmp"/k_text_document.*.tmp.$dead >/dev/null 2>&1 || fail "the dead run's temporaries remain"
[ -e "$tmp/k_text_document.bin.tmp.$$" ] || fail "a live process's temporary was removed"
[ -e "$tmp/k_text_document.bin.tmp.backup" ] || fail "a file that is not a temporary was removed"
[ -e "$tmp/k_text_document.bin" ] && [ -e "$tmp/k_text_document.idx" ] || fail "no output written"
echo "ok: temporaries of the killed run reaped, others kept"

# N109 (findings 2026-11-27): a writer that stalls. The read blocked until
# the writer closed (30 s in the finding) whatever the signals; now Ctrl-C
# ends it at once, with the same one line and no temporaries.
rm -f "$tmp/in"; mkfifo "$tmp/in"
{ head -3 "$tmp/small.jsonl"; printf '{"text": "a line, then the writer stalls"}\n'; exec sleep 120; } \
  >"$tmp/in" 2>/dev/null &
feeder=$!
"$kiln" preprocess --input "$tmp/in" --output-prefix "$tmp/stall" "${tok[@]}" --workers 1 >"$tmp/out" 2>"$tmp/err" &
run=$!
for _ in $(seq 600); do
  [ -e "$tmp/stall_text_document.bin.tmp.$run" ] && break
  sleep 0.1
done
[ -e "$tmp/stall_text_document.bin.tmp.$run" ] || { cat "$tmp/err"; fail "stalled pipe: no temporaries appeared"; }
sleep 0.5
kill -INT $run
for _ in $(seq 50); do kill -0 $run 2>/dev/null || break; sleep 0.1; done
kill -0 $run 2>/dev/null && fail "SIGINT did not stop preprocess waiting on a stalled pipe within 5 s"
finish
[ $rc -ne 0 ] && [ $rc -lt 128 ] || { cat "$tmp/err"; fail "stalled pipe: exit $rc"; }
grep -q "stopped by SIGINT; removed its temporary files" "$tmp/err" || { cat "$tmp/err"; fail "stalled pipe: no stop line"; }
left=$(ls "$tmp" | grep "^stall" || true)
[ -z "$left" ] || fail "stalled pipe left: $left"
echo "ok: SIGINT stops a read that waits on a stalled pipe"
