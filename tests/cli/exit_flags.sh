#!/usr/bin/env bash
# Megatron's exit flags in one process: --exit-signal-handler saves and exits
# 0 at the next iteration on SIGTERM and on --exit-signal SIGUSR1; a resume
# continues from that checkpoint and --exit-interval stops it (saving) at the
# next multiple. swiss-ai's --trigger-path: DIR/save saves and is removed,
# DIR/exit exits 0 without a checkpoint and stays, and a finished run creates
# DIR/exit. Bad values are refused in one line.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --train-iters 100000 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0
        --num-threads 1)
steps() { cat "$1" 2>/dev/null | grep -c '"iteration"' || true; }
last_step() { grep -o '"iteration":[0-9]*' "$1" | tail -1 | cut -d: -f2; }
first_step() { grep -o '"iteration":[0-9]*' "$1" | head -1 | cut -d: -f2; }
wait_until() {  # $1: condition (a shell command); $2: what it means
  for _ in $(seq 600); do eval "$1" && return 0; sleep 0.1; done
  echo "timed out waiting until $2"; exit 1
}
refused() {  # $1: expected message; the rest: flags
  local want=$1; shift
  local out status=0
  out=$("$kiln" train "${common[@]}" "$@" 2>&1) || status=$?
  [ "$status" != 0 ] && [ "$(echo "$out" | grep -c 'error')" = 1 ] && echo "$out" | grep -q -- "$want" ||
    { echo "not refused as expected ($want): status $status"; echo "$out"; exit 1; }
}

refused "--exit-signal SIGKILL is not one Megatron accepts; give SIGTERM, SIGINT, SIGUSR1 or SIGUSR2" \
  --exit-signal-handler --exit-signal SIGKILL
refused "--exit-signal SIGUSR1 needs --exit-signal-handler" --exit-signal SIGUSR1
refused "--exit-interval must be positive, got 0" --exit-interval 0
touch "$tmp/a-file"
refused "--trigger-path $tmp/a-file/triggers is not a directory and cannot be created" --trigger-path "$tmp/a-file/triggers"
refused "--trigger-path and --save-trigger-file both name the save trigger" --trigger-path "$tmp/t" \
  --save-trigger-file "$tmp/x"
echo "bad values refused in one line"

signal_saves() {  # $1: signal; $2: the flags that select it; $3: name
  local dir=$tmp/$3
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  "$kiln" train "${common[@]}" $2 --save "$dir/ck" --metrics-file "$dir/first.jsonl" >"$dir/first.log" 2>&1 &
  local pid=$!
  wait_until '[ "$(steps "$dir/first.jsonl")" -ge 3 ]' "$3: step 3 is logged"
  kill "-$1" "$pid"
  local status=0; wait "$pid" || status=$?
  [ "$status" = 0 ] || { echo "$3: exit status $status"; cat "$dir/first.log"; exit 1; }
  grep -q "received SIGTERM, SIGUSR2.*exiting at iteration .* with its checkpoint in\|received SIGTERM or SIGUSR2.*exiting at iteration .* with its checkpoint in" "$dir/first.log" ||
    { echo "$3: no exit line"; cat "$dir/first.log"; exit 1; }
  local saved; saved=$(cat "$dir/ck/latest_checkpointed_iteration.txt")
  # The signal's iteration finishes, saves, and is the last one run.
  [ "$saved" = "$(last_step "$dir/first.jsonl")" ] ||
    { echo "$3: saved at $saved, last step $(last_step "$dir/first.jsonl")"; exit 1; }
  # The resume continues at saved + 1; --exit-interval stops it at the next multiple of 2, saving.
  "$kiln" train "${common[@]}" --load "$dir/ck" --save "$dir/ck" --exit-interval 2 \
    --metrics-file "$dir/resumed.jsonl" >"$dir/resumed.log" 2>&1
  [ "$(first_step "$dir/resumed.jsonl")" = $((saved + 1)) ] || { echo "$3: resume did not continue"; exit 1; }
  local stop=$(( (saved / 2 + 1) * 2 ))
  [ "$(last_step "$dir/resumed.jsonl")" = "$stop" ] && [ "$(cat "$dir/ck/latest_checkpointed_iteration.txt")" = "$stop" ] ||
    { echo "$3: --exit-interval 2 did not stop and save at $stop"; cat "$dir/resumed.log"; exit 1; }
  grep -q "reached --exit-interval 2: exiting at iteration $stop with its checkpoint" "$dir/resumed.log" ||
    { cat "$dir/resumed.log"; exit 1; }
  echo "$3: saved at iteration $saved and exited 0; resumed at $((saved + 1)); --exit-interval 2 saved and exited at $stop"
}
signal_saves TERM "--exit-signal-handler" sigterm
signal_saves USR1 "--exit-signal-handler --exit-signal SIGUSR1" sigusr1

# swiss-ai's trigger directory, checked every --log-interval (2) steps.
trig=$tmp/triggers
"$kiln" train "${common[@]}" --log-interval 2 --trigger-path "$trig" --save "$tmp/tp" \
  --metrics-file "$tmp/tp.jsonl" >"$tmp/tp.log" 2>&1 &
pid=$!
wait_until '[ "$(steps "$tmp/tp.jsonl")" -ge 2 ]' "step 4 is logged"
touch "$trig/save"
wait_until '[ -f "$tmp/tp/latest_checkpointed_iteration.txt" ]' "DIR/save saves"
wait_until '[ ! -e "$trig/save" ]' "DIR/save is removed"
saved=$(cat "$tmp/tp/latest_checkpointed_iteration.txt")
at=$(steps "$tmp/tp.jsonl")
wait_until '[ "$(steps "$tmp/tp.jsonl")" -gt $((at + 1)) ]' "training continues after the save"
touch "$trig/exit"
status=0; wait "$pid" || status=$?
[ "$status" = 0 ] || { echo "DIR/exit: status $status"; cat "$tmp/tp.log"; exit 1; }
grep -q "found the exit trigger file $trig/exit (--trigger-path): exiting at iteration .* WITHOUT a checkpoint" \
  "$tmp/tp.log" || { cat "$tmp/tp.log"; exit 1; }
[ "$(cat "$tmp/tp/latest_checkpointed_iteration.txt")" = "$saved" ] || { echo "DIR/exit saved a checkpoint"; exit 1; }
[ -e "$trig/exit" ] || { echo "DIR/exit was removed (swiss-ai keeps it to cancel requeued jobs)"; exit 1; }
echo "--trigger-path: DIR/save saved at $saved and was removed; DIR/exit exited 0 without saving and stayed"
rm "$trig/exit"
"$kiln" train "${common[@]}" --train-iters 3 --trigger-path "$trig" >"$tmp/done.log" 2>&1
grep -q "Training finished after 3 iterations; Canceling pending scheduled jobs." "$tmp/done.log" && [ -e "$trig/exit" ] ||
  { echo "a finished run did not create DIR/exit"; cat "$tmp/done.log"; exit 1; }
echo "--trigger-path: a finished run created DIR/exit"
