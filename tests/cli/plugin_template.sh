#!/usr/bin/env bash
# The plugin SDK end to end: install this build into a temporary prefix,
# build examples/plugin-template out of tree against it (find_package(kiln)),
# check it with the conformance runner (its six ops pass, every other op is
# unsupported, the model cases pass through the cpu fallback), and train the
# default model with it: the split is logged and the loss follows the cpu
# backend's.
# Usage: plugin_template.sh <path-to-kiln> [<bad-plugin-dir>]
set -euo pipefail
kiln=$1
build=$(cd "$(dirname "$kiln")/.." && pwd)
src=$(cd "$(dirname "$0")/../../examples/plugin-template" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

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
  check "the template passes $op" grep -Eq "^PASS +$op " <<<"$out"
done
for op in matmul layernorm adamw permute; do
  check "the template reports $op unsupported" grep -Eq "^UNSUPPORTED +$op " <<<"$out"
done
check "the GPT step passes through the fallback" grep -Eq '^PASS +gpt_train_step .* on the cpu fallback' <<<"$out"

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
exit $fail
