# Sourced by the launch-line tests (tests/cli/*launch_line*.sh, through
# launch_data.sh or directly): the checks on a run. Needs $tmp.
# Runs one launch line ($1: its name, then kiln's command and flags) and
# checks that it trained: exit 0 and Megatron's iteration line with a loss.
# The output is left in $tmp/$1.log for further checks.
trains() {
  local name=$1; shift
  "$@" >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; echo "FAIL: $name did not train"; exit 1; }
  grep -q '] iteration .* lm loss: [0-9.E+-]* |' "$tmp/$name.log" ||
    { cat "$tmp/$name.log"; echo "FAIL: $name logged no loss"; exit 1; }
  echo "ok: $name trained ($(grep -c '] iteration ' "$tmp/$name.log") iteration lines)"
}
# Fails unless the run $1's log holds the text $2.
logged() { grep -qF -- "$2" "$tmp/$1.log" || { cat "$tmp/$1.log"; echo "FAIL: $1 did not log: $2"; exit 1; }; }
