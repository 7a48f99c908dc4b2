#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time (CI: .ci/run), two at a time
# (one per core). New inputs go to a scratch directory, never into the
# committed corpus; a crash leaves its reproducer in BUILD_DIR/fuzz-artifacts/.
#
#   tests/fuzz/run-fuzzers.sh [BUILD_DIR] [SECONDS_PER_TARGET] [TARGET...]
#
# BUILD_DIR is an asan-preset build (default build-asan; KILN_FUZZ=ON), SECONDS_PER_TARGET
# defaults to 60, TARGETs to all of them. Exit status 1 if any target failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build-asan}" && pwd)
secs=${2:-60}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ir mmidx safetensors checkpoint_meta jsonl cache_entry)
parallel=${KILN_FUZZ_JOBS:-2}
if ! grep -q '^KILN_FUZZ:BOOL=ON$' "$build/CMakeCache.txt" 2> /dev/null; then
  echo "fuzz: $build is not a libFuzzer build (KILN_FUZZ=ON); cmake --preset asan makes one in build-asan" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run_one() {
  local t=$1 art="$build/fuzz-artifacts/$t"
  mkdir -p "$art" "$work/$t"
  local dirs=("$work/$t" "$here/corpus/$t")
  [ -d "$here/regressions/$t" ] && dirs+=("$here/regressions/$t")
  "$build/bin/kiln_fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$art/" "${dirs[@]}" > "$work/$t.log" 2>&1
}

failed=()
pids=()
names=()
finish() {  # waits for the oldest running target and reports it
  local pid=${pids[0]} t=${names[0]}
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  if wait "$pid"; then
    local execs cov
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$work/$t.log" | tail -1)
    printf 'fuzz %-16s ok: %s runs in %s s, %s\n' "$t" "${execs:-?}" "$secs" "${cov:-cov: ?}"
  else
    failed+=("$t")
    echo "fuzz $t FAILED; the end of its log:"
    tail -n 60 "$work/$t.log"
    echo "reproducer(s) in $build/fuzz-artifacts/$t/; replay one with $build/bin/kiln_fuzz_$t FILE," \
         "then add it to tests/fuzz/regressions/$t/"
  fi
}
for t in "${targets[@]}"; do
  [ -x "$build/bin/kiln_fuzz_$t" ] || { echo "fuzz: $build/bin/kiln_fuzz_$t not built" >&2; exit 2; }
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  [ ${#pids[@]} -ge "$parallel" ] && finish
done
while [ ${#pids[@]} -gt 0 ]; do finish; done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${secs} s each without a finding"
