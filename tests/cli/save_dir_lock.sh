#!/usr/bin/env bash
# One writer per --save directory (issue 13, items 10 and 11): a second run
# on a directory in use is refused in one line naming the holder; after the
# holder is killed (kill -9: no cleanup), the next run takes the lock over
# and removes the temporaries interrupted saves leave (.tmp_iter_*,
# .latest_checkpointed_iteration.txt.PID), and nothing else.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d)
holder=
trap '[ -n "$holder" ] && kill -9 $holder 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0
       --log-interval 1000)
save=$tmp/ck

"$kiln" train "${small[@]}" --train-iters 1000000 --save "$save" --save-interval 1000000 >"$tmp/holder.log" 2>&1 &
holder=$!
for _ in $(seq 600); do [ -e "$save/.kiln-save.lock" ] && break; kill -0 $holder 2>/dev/null || break; sleep 0.1; done
[ -e "$save/.kiln-save.lock" ] || { cat "$tmp/holder.log"; fail "the first run never took the lock"; }

"$kiln" train "${small[@]}" --train-iters 1 --save "$save" >"$tmp/out" 2>"$tmp/err"; rc=$?
grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
[ $rc -ne 0 ] || fail "a second writer on $save was accepted"
[ "$(wc -l < "$tmp/err.lines")" -eq 1 ] || { cat "$tmp/err"; fail "expected one error line"; }
grep -q -- "--save $save is in use by another kiln run (pid $holder on " "$tmp/err.lines" ||
  { cat "$tmp/err.lines"; fail "the error does not name the holder"; }
echo "ok: $(cat "$tmp/err.lines")"

kill -9 $holder; wait $holder 2>/dev/null; holder=
# What a kill -9 in the middle of a save leaves, and a file of the user's.
mkdir -p "$save/.tmp_iter_0000003.99999" && head -c 100000 /dev/zero > "$save/.tmp_iter_0000003.99999/model.safetensors"
echo 3 > "$save/.latest_checkpointed_iteration.txt.99999"
echo mine > "$save/notes.txt"
"$kiln" train "${small[@]}" --train-iters 1 --save "$save" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "the run after the kill failed"; }
grep -q "removed 2 temporaries left by an interrupted save" "$tmp/err" || { cat "$tmp/err"; fail "no reaping reported"; }
[ ! -e "$save/.tmp_iter_0000003.99999" ] && [ ! -e "$save/.latest_checkpointed_iteration.txt.99999" ] ||
  fail "temporaries remain"
[ "$(cat "$save/notes.txt")" = mine ] || fail "a user file was removed"
[ -e "$save/iter_0000001/model.safetensors" ] || fail "no checkpoint written"
[ ! -e "$save/.kiln-save.lock" ] || fail "the lock outlived the run"
echo "ok: stale lock taken over, temporaries reaped, notes.txt kept"

# A lock file that is not kiln's (garbage content) is named as such, not as
# "pid 0 on garbage" (N61); once 60 s old it is taken over as before.
junk=$tmp/junk
mkdir "$junk" && echo garbage > "$junk/.kiln-save.lock"
"$kiln" train "${small[@]}" --train-iters 1 --save "$junk" >"$tmp/out" 2>"$tmp/err"; rc=$?
grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
[ $rc -ne 0 ] || fail "a garbage lock file was ignored"
[ "$(wc -l < "$tmp/err.lines")" -eq 1 ] || { cat "$tmp/err"; fail "expected one error line"; }
grep -q "^kiln: error: $junk/.kiln-save.lock is not a kiln lock file" "$tmp/err.lines" ||
  { cat "$tmp/err.lines"; fail "the error does not say the lock file is not kiln's"; }
echo "ok: $(cat "$tmp/err.lines")"
touch -d '2 minutes ago' "$junk/.kiln-save.lock"
"$kiln" train "${small[@]}" --train-iters 1 --save "$junk" >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "a garbage lock 2 minutes old was not taken over"; }
[ -e "$junk/iter_0000001/model.safetensors" ] && [ ! -e "$junk/.kiln-save.lock" ] || fail "no save after the takeover"
echo "ok: the garbage lock, 2 minutes old, was taken over"
