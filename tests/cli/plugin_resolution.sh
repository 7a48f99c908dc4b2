#!/usr/bin/env bash
# The first plugin file on the path named for a backend is the one used
# (issue 37, item 1). Before: a broken libkiln-backend-cpu.so early on
# KILN_PLUGIN_PATH (ABI mismatch, undefined symbol) was skipped at debug
# level and the next file on the path, here the build's own, trained in
# its place, and no log line named the file that ran.
# Usage: plugin_resolution.sh <path-to-kiln> <bad-plugin-dir>
set -uo pipefail
kiln=$1
bad_dir=$2
good=$(dirname "$kiln")/libkiln-backend-cpu.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0
       --log-interval 1000 --eval-interval 1000 --train-iters 2)
export KILN_CACHE_DIR=off
[ -f "$good" ] || fail "no cpu plugin beside $kiln"

for bad in wrong_abi missing_symbol; do
  mkdir -p "$tmp/$bad"
  cp "$bad_dir/libkiln-backend-$bad.so" "$tmp/$bad/libkiln-backend-cpu.so"
  broken=$tmp/$bad/libkiln-backend-cpu.so
  # --backend cpu fails in one line naming the broken file; the good one
  # later on the path (the build's own) is not taken in its place.
  KILN_PLUGIN_PATH=$tmp/$bad timeout 300 "$kiln" train "${small[@]}" --backend cpu >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || { cat "$tmp/err"; fail "$bad: --backend cpu exited $rc, not 1"; }
  grep -v '^\[kiln\] \[info\]' "$tmp/err" >"$tmp/err.lines"
  [ "$(wc -l <"$tmp/err.lines")" -eq 1 ] || { cat "$tmp/err"; fail "$bad: expected one error line"; }
  grep -Fq "kiln: error: backend 'cpu' found at $broken but not loaded: " "$tmp/err.lines" ||
    { cat "$tmp/err.lines"; fail "$bad: the error does not name the broken file"; }
  grep -Fq "(kiln does not fall back to the later " "$tmp/err.lines" ||
    { cat "$tmp/err.lines"; fail "$bad: the error does not say the later file was not taken"; }
  grep -q "iteration" "$tmp/out" && fail "$bad: trained anyway"
  echo "ok: $(cat "$tmp/err.lines")"

  # kiln devices shows both files, and which one --backend cpu uses.
  KILN_PLUGIN_PATH=$tmp/$bad timeout 300 "$kiln" devices >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "devices failed"; }
  grep -Eq "^  file $broken: not loaded: .*\(--backend cpu uses this file, so it fails\)$" "$tmp/out" ||
    { cat "$tmp/out"; fail "$bad: kiln devices does not mark the broken first file"; }
  grep -Eq "^  file .*/libkiln-backend-cpu\.so: loaded$" "$tmp/out" ||
    { cat "$tmp/out"; fail "$bad: kiln devices does not list the later, loaded file"; }
  echo "ok: kiln devices lists both files"
done

# With a good first file, the log names the plugin file and its build-id.
mkdir "$tmp/good"
cp "$good" "$tmp/good/"
KILN_PLUGIN_PATH=$tmp/good timeout 300 "$kiln" train "${small[@]}" --backend cpu >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "training with a good plugin first failed"; }
grep -Eq "backend cpu device 0: .* \(plugin $tmp/good/libkiln-backend-cpu\.so, build-id:[0-9a-f]+\)" "$tmp/err" ||
  { cat "$tmp/err"; fail "the log does not name the plugin file and build-id used"; }
KILN_PLUGIN_PATH=$tmp/good timeout 300 "$kiln" devices >"$tmp/out" 2>&1
grep -Eq "^  file $tmp/good/libkiln-backend-cpu\.so: loaded \(used by --backend cpu\)$" "$tmp/out" ||
  { cat "$tmp/out"; fail "kiln devices does not mark the file --backend cpu uses"; }
echo "ok: the first good file is used and named"
