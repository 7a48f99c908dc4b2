#!/usr/bin/env bash
# Plugins are loaded only when needed, and one that ends the process while
# loading is named (issue 13, item 5). Before: every command dlopened every
# plugin file on the path, so a stray library whose constructor crashes
# killed `kiln train --backend cpu` (SIGSEGV, no message), one whose
# constructor calls exit(0) made `kiln train --save D` exit 0 without
# training, and 3000 junk files were each dlopened, quadratically (24 s).
# Usage: lazy_plugin_loading.sh <path-to-kiln> <bad-plugin-dir>
set -uo pipefail
kiln=$1
bad_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0
       --log-interval 1000 --train-iters 2)
export KILN_CACHE_DIR=off

stray=$tmp/stray
mkdir "$stray"
cp "$bad_dir"/libkiln-backend-{crashes_in_constructor,exits_in_constructor}.so "$stray"/

# --backend cpu never loads the stray libraries: it trains and saves.
KILN_PLUGIN_PATH=$stray timeout 300 "$kiln" train "${small[@]}" --backend cpu --save "$tmp/ck" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/err"; fail "kiln train --backend cpu with stray plugins on the path exited $rc"; }
[ -e "$tmp/ck/iter_0000002/model.safetensors" ] || fail "kiln train --backend cpu exited 0 without saving"
echo "ok: kiln train --backend cpu trains with the stray plugins on the path"

# Asking for one of them is an error naming it, never a crash or a silent 0.
for bad in crashes_in_constructor exits_in_constructor; do
  KILN_PLUGIN_PATH=$stray timeout 300 "$kiln" train "${small[@]}" --backend $bad >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || { cat "$tmp/err"; fail "--backend $bad exited $rc, not 1"; }
  grep -v '^\[kiln\] \[info\]' "$tmp/err" >"$tmp/err.lines"
  [ "$(wc -l <"$tmp/err.lines")" -eq 1 ] || { cat "$tmp/err"; fail "--backend $bad: expected one error line"; }
  grep -Eq "^kiln: error: plugin $stray/libkiln-backend-$bad.so (crashed|called exit\(\)) while loading; remove it from $stray\$" \
    "$tmp/err.lines" || { cat "$tmp/err.lines"; fail "--backend $bad: the error does not name the plugin"; }
  echo "ok: $(cat "$tmp/err.lines")"
done

# check-backend opens the device in a child process: its one line is the
# guard's, with no second line blaming exit() for a crash (N104).
for bad in crashes_in_constructor exits_in_constructor; do
  timeout 300 "$kiln" check-backend "$stray/libkiln-backend-$bad.so" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || { cat "$tmp/out" "$tmp/err"; fail "check-backend $bad exited $rc, not 1"; }
  [ "$(cat "$tmp/out" "$tmp/err" | wc -l)" -eq 1 ] || { cat "$tmp/out" "$tmp/err"; fail "check-backend $bad: expected one line"; }
  grep -Eq "^kiln: error: plugin $stray/libkiln-backend-$bad.so (crashed|called exit\(\)) while loading; remove it from $stray\$" \
    "$tmp/err" || { cat "$tmp/err"; fail "check-backend $bad: the error does not name the plugin"; }
  echo "ok: check-backend: $(cat "$tmp/err")"
done

# kiln devices probes every file and reports each bad one in one line.
KILN_PLUGIN_PATH=$stray timeout 300 "$kiln" devices >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/out" "$tmp/err"; fail "kiln devices exited $rc"; }
grep -Eq '^backend cpu ' "$tmp/out" || { cat "$tmp/out"; fail "kiln devices lost the cpu backend"; }
# Under AddressSanitizer (the asan preset sets ASAN_OPTIONS), ASan's own SEGV
# handler ends the probing child with its exit code 1 before the signal
# reaches kiln, so the probe reports the exit status instead of the signal.
crash_report="crashed with signal 11 (Segmentation fault)"
[ -n "${ASAN_OPTIONS:-}" ] && crash_report="ended the process with status 1"
grep -Fxq "  $stray/libkiln-backend-crashes_in_constructor.so: $crash_report while loading; remove it from $stray" \
  "$tmp/out" || { cat "$tmp/out"; fail "kiln devices does not report the crashing plugin"; }
grep -Fxq "  $stray/libkiln-backend-exits_in_constructor.so: called exit() while loading; remove it from $stray" \
  "$tmp/out" || { cat "$tmp/out"; fail "kiln devices does not report the exiting plugin"; }
echo "ok: kiln devices reports both"

# 3000 junk files: --backend cpu dlopens one file (the debug log has one
# line per file loaded), and kiln devices lists each junk file once.
junk=$tmp/junk
mkdir "$junk"
for i in $(seq 3000); do echo junk >"$junk/libkiln-backend-junk$i.so"; done
KILN_LOG_LEVEL=debug KILN_PLUGIN_PATH=$junk timeout 300 "$kiln" train "${small[@]}" --backend cpu >"$tmp/out" 2>"$tmp/err" ||
  { tail -n 3 "$tmp/err"; fail "kiln train with 3000 junk files failed"; }
loads=$(grep -c '\[debug\] plugin .*: \(loaded\|skipped\)' "$tmp/err")
[ "$loads" -eq 1 ] || fail "kiln train --backend cpu loaded $loads plugin files, expected 1"
KILN_PLUGIN_PATH=$junk timeout 300 "$kiln" devices >"$tmp/out" 2>"$tmp/err" || fail "kiln devices with junk failed"
[ "$(grep -c "^  $junk/libkiln-backend-junk[0-9]*\.so: not a loadable shared library" "$tmp/out")" -eq 3000 ] ||
  fail "kiln devices did not list the 3000 junk files once each"
echo "ok: 3000 junk files: train loads 1 file, devices lists each once"
