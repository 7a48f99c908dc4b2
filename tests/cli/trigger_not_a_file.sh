#!/usr/bin/env bash
# A trigger file kiln removes once it acts on it (<save>/kiln-exit-now,
# <save>/kiln-save-now, --trigger-path DIR/save) must be a file: a non-empty
# directory of that name could not be removed, so it stopped every run and
# every resume at the first check with status 0 and no warning (issue 36,
# X4). It is refused before training, in one line naming it and the fix; a
# plain file still saves, exits 0 and is removed.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
# --log-interval (the trigger check's period) and the eval flags explicit:
# their defaults are changing.
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2
       --log-interval 2 --eval-interval 100 --eval-iters 0 --train-iters 6)
expect_error() {
  local want=$1; shift
  "$kiln" train "${small[@]}" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
  local lines=$(wc -l <"$tmp/err.lines")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err.lines" || grep -q iteration "$tmp/out"; then
    echo "FAIL: kiln train $* -> rc=$rc, want '$want', stdout/stderr:"; cat "$tmp/out" "$tmp/err"; fails=$((fails+1))
  else
    echo "ok: $(cat "$tmp/err.lines")"
  fi
}
mkdir -p "$tmp/x4/kiln-exit-now/sub"; echo x > "$tmp/x4/kiln-exit-now/sub/f"
expect_error "exit trigger file (--exit-trigger-file) $tmp/x4/kiln-exit-now is a directory: kiln removes a trigger once it acts on it and cannot remove this one" \
  --save "$tmp/x4"
[ -f "$tmp/x4/kiln-exit-now/sub/f" ] || { echo "FAIL: the directory's contents were touched"; fails=$((fails+1)); }
mkdir -p "$tmp/x4s/kiln-save-now"
expect_error "save trigger file (--save-trigger-file) $tmp/x4s/kiln-save-now is a directory" --save "$tmp/x4s"
mkdir -p "$tmp/x4e/mine"
expect_error "exit trigger file (--exit-trigger-file) $tmp/x4e/mine is a directory" --exit-trigger-file "$tmp/x4e/mine"
mkdir -p "$tmp/tp/save"
expect_error "save trigger file (--trigger-path DIR/save) $tmp/tp/save is a directory" --trigger-path "$tmp/tp"

# A plain trigger file: saved at the first check (iteration 2), exit 0, removed.
mkdir -p "$tmp/ok"; touch "$tmp/ok/kiln-exit-now"
if ! "$kiln" train "${small[@]}" --save "$tmp/ok" >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: a plain exit trigger file:"; cat "$tmp/err"; fails=$((fails+1))
elif [ -e "$tmp/ok/kiln-exit-now" ] || [ "$(cat "$tmp/ok/latest_checkpointed_iteration.txt")" != 2 ]; then
  echo "FAIL: a plain exit trigger file was not acted on at iteration 2 and removed"; ls -l "$tmp/ok"; fails=$((fails+1))
else
  echo "ok: a plain exit trigger file saves at iteration 2, exits 0 and is removed"
fi
exit $fails
