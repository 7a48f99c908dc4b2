#!/usr/bin/env bash
# `kiln check-backend` on every backend listed below that this build has
# (one that is missing or has no device is skipped with a message, not
# failed), then the runner's own flags and errors.
# Usage: check_backend.sh <path-to-kiln> [<bad-plugin-dir>]
# Not under ASan: the conformance suite again, through the command line: 420 s
#   under ASan, nearly all in PoCL's, lavapipe's and oneDNN's uninstrumented
#   code; BackendConformance.* runs the same cases through kiln's code under
#   ASan.
set -u
kiln=$1

# To run the conformance suite on another backend in CI, add its name here.
BACKENDS=(
  cpu
  opencl
  vulkan
)

fail=0
check() {  # check <description> <command...>
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what" >&2
    fail=1
  fi
}

devices=$("$kiln" devices 2>&1)
for b in "${BACKENDS[@]}"; do
  if ! grep -Eq "^backend $b " <<<"$devices"; then
    echo "SKIP: backend $b is not available in this build (kiln devices does not list it)"
    continue
  fi
  if ! awk -v b="$b" '$1 == "backend" { on = ($2 == b) } on && /^  device 0:/ { found = 1 } END { exit !found }' <<<"$devices"; then
    echo "SKIP: backend $b has no device on this machine"
    continue
  fi
  # The whole default suite on cpu; on the other backends only the
  # whole-model cases. Their every op case, in f32 and in 16-bit copies
  # judged against the rounded reference, runs in
  # BackendConformance.PassesEveryCase/<backend> (the same runner in one
  # process): running it here again doubled this test's time, for OpenCL
  # PoCL's compiles most of all.
  filter=()
  [ "$b" = cpu ] || filter=(--filter gpt_)
  out=$("$kiln" check-backend "$b" "${filter[@]}" 2>&1)
  status=$?
  echo "$out"
  check "check-backend $b ${filter[*]} exits 0 (got $status: failed ops)" test "$status" -eq 0
  check "check-backend $b prints a summary with no failures" grep -Eq '^summary: [0-9]+ passed, 0 failed' <<<"$out"
  check "check-backend $b runs the GPT train step" grep -Eq '^PASS +gpt_train_step ' <<<"$out"
  # --dtype bf16: every backend passes its ops against the f32 reference.
  out=$("$kiln" check-backend "$b" --dtype bf16 2>&1)
  status=$?
  echo "$out" | tail -n 1
  check "check-backend $b --dtype bf16 exits 0 (got $status)" test "$status" -eq 0
  check "check-backend $b --dtype bf16 says which cases it left out" grep -Eq '^--dtype bf16: [0-9]+ op cases left out' <<<"$out"
  if [ "$b" = cpu ]; then
    check "check-backend cpu --dtype bf16 passes every op" grep -Eq '^summary: [1-9][0-9]+ passed, 0 failed, 0 unsupported' <<<"$out"
  else
    # OpenCL and Vulkan store 16-bit values (docs/MIXED_PRECISION.md); what
    # they lack in f32 too (the vocab-parallel pieces) stays unsupported.
    check "check-backend $b --dtype bf16 passes every op it has" grep -Eq '^summary: [1-9][0-9]+ passed, 0 failed' <<<"$out"
    check "check-backend $b --dtype bf16 refuses no case for its dtype" \
      test "$(grep '^UNSUPPORTED' <<<"$out" | grep -vc ' backend lacks ')" -eq 0
  fi
done
# A device that cannot store bf16 (a Vulkan device without
# storageBuffer16BitAccess, hidden by the test hook) reports every 16-bit
# case unsupported with its reason, and never passes one on the cpu fallback.
if grep -Eq "^backend vulkan " <<<"$devices" && grep -q "16-bit storage" <<<"$devices"; then
  out=$(KILN_VULKAN_NO_16BIT_STORAGE=1 "$kiln" check-backend vulkan --dtype bf16 2>&1)
  echo "$out" | tail -n 1
  check "vulkan without 16-bit storage passes no bf16 case" grep -Eq '^summary: 0 passed, 0 failed, [1-9][0-9]* unsupported' <<<"$out"
  check "vulkan without 16-bit storage names the feature" grep -q 'lacks storageBuffer16BitAccess' <<<"$out"
fi
out=$("$kiln" check-backend cpu --dtype f16 2>&1)
check "check-backend cpu --dtype f16 passes every op" grep -Eq '^summary: [1-9][0-9]+ passed, 0 failed, 0 unsupported' <<<"$out"
out=$("$kiln" check-backend cpu --dtype f32 --filter gelu 2>&1)
check "check-backend cpu --dtype f32 runs only f32 cases" test "$(grep -c 'bf16\|f16' <<<"$out")" -eq 0

# --list needs no device and names every op of the op table (read from
# include/kiln/ops.h, the one list), forward and backward, except host
# collectives, which no plugin runs; and the whole-model cases.
ops_table="$(dirname "$0")/../../include/kiln/ops.h"
ops=$(grep -E '^ *X\([A-Z_]+, [0-9]+, "' "$ops_table" | grep -v 'KILN_HC' | sed -E 's/^ *X\([A-Z_]+, [0-9]+, "([a-z_0-9]+)".*/\1/')
check "the op table lists ops" test "$(wc -w <<<"$ops")" -ge 20
list=$("$kiln" check-backend --list 2>&1)
for op in $ops gpt_train_step gpt_optimizer_step; do
  check "--list has cases for $op" grep -Eq "^$op " <<<"$list"
done

out=$("$kiln" check-backend cpu --filter 'matmul' --verbose 2>&1)
status=$?
check "a filtered run exits 0 (got $status)" test "$status" -eq 0
check "--filter runs only matching ops" test "$(grep -Ec '^(PASS|FAIL|UNSUPPORTED) ' <<<"$out")" -eq 1
check "--verbose prints a line per case with its NMSE" grep -Eq '^  PASS +matmul \[65, 17\]\^T @ .* y=' <<<"$out"

expect_error() {  # expect_error <words> <args...>: one line on stderr, status 1
  local want=$1
  shift
  local err
  err=$("$kiln" check-backend "$@" 2>&1 >/dev/null)
  local status=$?
  check "check-backend $* fails with status 1 (got $status)" test "$status" -eq 1
  check "check-backend $* says '$want' in one line (got: $err)" \
    test "$(grep -c . <<<"$err")" -eq 1 -a -n "$(grep -F -- "$want" <<<"$err")"
}
# --large adds the cases above 2^20 elements; they stay out of the default
# run. One of them runs here on cpu (well under a second).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kiln" check-backend --list >"$tmp/list.txt" 2>&1
"$kiln" check-backend --list --large >"$tmp/list_large.txt" 2>&1
check "the default suite has no large cases" test "$(grep -Ec ' large (\[|N=)' "$tmp/list.txt")" -eq 0
check "--large lists cases above 2^20 elements" grep -q '^gelu .* gelu large \[1048577\]$' "$tmp/list_large.txt"
"$kiln" check-backend cpu --large --filter "gelu large" >"$tmp/large.txt" 2>&1
check "check-backend cpu --large passes its gelu case" grep -Eq '^PASS +gelu +1 case ' "$tmp/large.txt"

expect_error "no backend 'nosuch'" nosuch
expect_error "needs a backend name" --filter gelu
expect_error "no conformance case matches" cpu --filter no-such-op
expect_error "cannot use plugin" /nonexistent/libkiln-backend-x.so
expect_error "--dtype must be bf16, f16 or f32" cpu --dtype f64

exit $fail
