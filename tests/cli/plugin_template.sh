#!/usr/bin/env bash
# The plugin SDK end to end: install this build into a temporary prefix,
# build examples/plugin-template out of tree against it (find_package(kiln)),
# check it with the conformance runner (its seven ops pass, every other op
# is unsupported, the model cases pass through the cpu fallback; the
# matmuls its op_supported_node refuses, the kit's per-node hook, count as
# on the fallback, and fail under --strict), and train the
# default model with it: the split is logged and the loss follows the cpu
# backend's. Then (issue 19) the compile cache sees the plugin binary: after
# precompiling and training with the template, it is rebuilt with one kernel
# changed and its compiler_version untouched; a run on the same cache
# refuses under --require-precompiled naming the plugin binary, and without
# it recompiles (its cache line counts compilations) and trains to a
# different loss.
# The same backend on the kit's interpreter base (interpreter.cpp) passes
# the same ops and trains to the same losses, sharing its host buffers.
# Usage: plugin_template.sh <path-to-kiln> [<bad-plugin-dir>]
set -euo pipefail
kiln=$1
build=$(cd "$(dirname "$kiln")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A copy, so that the test can change a kernel and rebuild.
cp -r "$(dirname "$0")/../../examples/plugin-template" "$tmp/src"
src=$tmp/src

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$src" -B "$tmp/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" >/dev/null
plugin=$tmp/build/libkiln-backend-template.so
test -f "$plugin" || { echo "FAIL: the template did not build $plugin"; exit 1; }

# The installed kiln finds the installed cpu backend (which runs what the
# template lacks) beside itself, not the build tree's.
installed=$tmp/prefix/bin/kiln
unset KILN_PLUGIN_PATH

fail=0
check() {  # check <description> <command...>
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what" >&2
    fail=1
  fi
}

status=0
out=$("$installed" check-backend "$plugin" 2>&1) || status=$?
echo "$out"
check "check-backend on the template exits 0 (got $status)" test "$status" -eq 0
for op in fill add mul scale gelu gelu_grad; do
  check "the template passes $op" grep -Eq "^PASS +$op +[0-9]+ cases? " <<<"$out"
done
for op in layernorm adamw permute; do
  check "the template reports $op unsupported" grep -Eq "^UNSUPPORTED +$op " <<<"$out"
done
check "the GPT step passes through the fallback" grep -Eq '^PASS +gpt_train_step .* on the cpu fallback' <<<"$out"
# MATMUL: the cases above kMaxMatmulMacs ran on cpu, and the line counts
# only the others.
matmul=$(grep -E '^PASS +matmul ' <<<"$out" || true)
check "matmul passes on the template for some cases, on the fallback for the rest: $matmul" \
  grep -Eq '^PASS +matmul +[1-9][0-9]*/[0-9]+ cases \([1-9][0-9]* on the fallback\) .*first on the fallback: matmul .*0 ops on template, 1 on the cpu fallback \(matmul\)' <<<"$matmul"
read -r ran total fell < <(sed -E 's|^PASS +matmul +([0-9]+)/([0-9]+) cases \(([0-9]+) on.*|\1 \2 \3|' <<<"$matmul")
lowp=$(grep -Eo '  [0-9]+ unsupported' <<<"$matmul" | tr -dc 0-9 || true)  # its bf16/f16 cases
check "matmul: $ran on the template + $fell on the fallback + ${lowp:-0} unsupported = $total cases" \
  test "$((ran + fell + ${lowp:-0}))" -eq "$total"
check "the summary counts fallback ops" grep -Eq '^summary: [0-9]+ passed, 0 failed, [0-9]+ unsupported, [0-9]+ fallback ' <<<"$out"
# An op whose every case ran on the fallback is not a pass.
status=0
out=$("$installed" check-backend "$plugin" --large --filter "matmul large" 2>&1) || status=$?
echo "$out"
check "check-backend --large --filter 'matmul large' exits 0 (got $status)" test "$status" -eq 0
check "the large matmul alone is FALLBACK" grep -Eq '^FALLBACK +matmul +0/1 cases \(1 on the fallback\)  first: matmul large' <<<"$out"
check "the summary counts it" grep -Eq '^summary: 0 passed, 0 failed, 0 unsupported, 1 fallback ' <<<"$out"
# --strict: the fallback fails.
status=0
out=$("$installed" check-backend "$plugin" --strict --filter matmul,gelu 2>&1) || status=$?
echo "$out"
check "check-backend --strict exits with the one failed op (got $status)" test "$status" -eq 1
check "--strict fails matmul, naming the fallback" \
  grep -Eq '^FAIL +matmul +[0-9]+ cases .*failed; first: matmul .*--strict: 0 ops on template, 1 on the cpu fallback \(matmul\)' <<<"$out"
check "--strict passes gelu, which never falls back" grep -Eq '^PASS +gelu ' <<<"$out"

common=(train --train-iters 5 --log-interval 1 --eval-iters 1)
status=0
"$installed" "${common[@]}" --backend "$plugin" --metrics-file "$tmp/template.jsonl" >"$tmp/template.log" 2>&1 || status=$?
cat "$tmp/template.log"
check "training on the template exits 0 (got $status)" test "$status" -eq 0
check "each missing op is logged once" grep -q "template: matmul runs on the cpu fallback ([0-9]* nodes* per iteration)" "$tmp/template.log"
check "a missing op is logged once, not per graph" test "$(grep -c "template: matmul runs on the cpu fallback" "$tmp/template.log")" -eq 1
check "the split is logged per graph" grep -Eq "split: train step .* ops on template, [0-9]+ on cpu" "$tmp/template.log"
check "bytes moved per iteration are logged" grep -Eq "split: .* copied between template and cpu per iteration" "$tmp/template.log"
"$installed" "${common[@]}" --backend cpu --metrics-file "$tmp/cpu.jsonl" >/dev/null 2>&1

losses() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }
paste <(losses "$tmp/template.jsonl") <(losses "$tmp/cpu.jsonl") >"$tmp/pairs"
cat "$tmp/pairs"
check "5 losses from each backend" test "$(grep -c . "$tmp/pairs")" -eq 5
check "template losses match cpu within 1e-4 relative" \
  awk '{ d = $1 - $2; if (d < 0) d = -d; if (NF != 2 || d > 1e-4 * $2) bad = 1 } END { exit bad }' "$tmp/pairs"

# ---- the same backend on the kit's interpreter base (interpreter.cpp)
interp=$tmp/build/libkiln-backend-interpreter.so
status=0
out=$("$installed" check-backend "$interp" 2>&1) || status=$?
echo "$out"
check "check-backend on the interpreter exits 0 (got $status)" test "$status" -eq 0
for op in fill add mul scale gelu gelu_grad; do
  check "the interpreter passes $op" grep -Eq "^PASS +$op +[0-9]+ cases? " <<<"$out"
done
check "the interpreter's refusal hook sends the large matmuls to the fallback" \
  grep -Eq '^PASS +matmul +[1-9][0-9]*/[0-9]+ cases \([1-9][0-9]* on the fallback\)' <<<"$out"
status=0
"$installed" "${common[@]}" --backend "$interp" --metrics-file "$tmp/interp.jsonl" >"$tmp/interp.log" 2>&1 || status=$?
cat "$tmp/interp.log"
check "training on the interpreter exits 0 (got $status)" test "$status" -eq 0
check "its buffers are shared with the fallback, not copied" grep -Eq "split: .* shared in host memory" "$tmp/interp.log"
paste <(losses "$tmp/interp.jsonl") <(losses "$tmp/cpu.jsonl") >"$tmp/interp.pairs"
check "5 interpreter losses" test "$(grep -c . "$tmp/interp.pairs")" -eq 5
check "interpreter losses match cpu within 1e-4 relative" \
  awk '{ d = $1 - $2; if (d < 0) d = -d; if (NF != 2 || d > 1e-4 * $2) bad = 1 } END { exit bad }' "$tmp/interp.pairs"

# ---- the plugin binary in the compile-cache key
tiny=(train --num-layers 1 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --micro-batch-size 2
      --global-batch-size 2 --train-iters 2 --eval-iters 0 --log-interval 1 --num-threads 1
      --backend "$plugin" --cache-dir "$tmp/cache")
cache_line() { grep -o "compile cache: .* compiled" "$1" | tail -1; }
compiled() { cache_line "$1" | sed 's/.*, \([0-9]*\) compiled.*/\1/'; }
"$installed" precompile "${tiny[@]:1}" >"$tmp/precompile.log" 2>&1 || { cat "$tmp/precompile.log"; check "precompile" false; }
"$installed" "${tiny[@]}" --require-precompiled --metrics-file "$tmp/before.jsonl" >"$tmp/before.log" 2>&1 ||
  { cat "$tmp/before.log"; check "train on the precompiled cache" false; }
echo "before the rebuild: $(cache_line "$tmp/before.log")"
check "the first run compiles nothing" test "$(compiled "$tmp/before.log")" = 0

# GELU's result changes; kCompilerVersion stays "template-2".
sed -i 's/y\[k\] = static_cast<float>(gelu(a\[k\]));/y[k] = static_cast<float>(gelu(a[k]) * 1.25);/' "$src/kernels.h"
check "the kernel edit applied" grep -q "gelu(a\[k\]) \* 1.25" "$src/kernels.h"
check "compiler_version untouched" grep -q 'kCompilerVersion\[\] = "template-2"' "$src/template.cpp"
cmake --build "$tmp/build" >/dev/null

status=0
"$installed" "${tiny[@]}" --require-precompiled >"$tmp/stale.log" 2>&1 || status=$?
cat "$tmp/stale.log"
check "--require-precompiled refuses the rebuilt plugin's graphs (status $status)" test "$status" -eq 1
check "--require-precompiled names the plugin binary as the difference" \
  grep -q "differs in plugin binary (build-id:[0-9a-f]* here, build-id:[0-9a-f]* in the cache" "$tmp/stale.log"
"$installed" "${tiny[@]}" --metrics-file "$tmp/after.jsonl" >"$tmp/after.log" 2>&1 ||
  { cat "$tmp/after.log"; check "train after the rebuild" false; }
echo "after the rebuild: $(cache_line "$tmp/after.log")"
check "the rebuilt plugin's graphs recompile" test "$(compiled "$tmp/after.log")" -gt 0
echo "losses before: $(losses "$tmp/before.jsonl" | tr '\n' ' ') after: $(losses "$tmp/after.jsonl" | tr '\n' ' ')"
check "two losses before the rebuild" test "$(losses "$tmp/before.jsonl" | grep -c .)" -eq 2
check "the loss differs after the rebuild" test "$(losses "$tmp/before.jsonl")" != "$(losses "$tmp/after.jsonl")"
exit $fail
