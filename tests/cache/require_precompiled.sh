#!/usr/bin/env bash
# After `kiln precompile ARGS`, `kiln train ARGS --require-precompiled`
# compiles nothing; a different micro-batch size fails naming the shape;
# a second precompile finds everything cached; a precompile in another
# process and directory produces the same keys.
source "$(dirname "$0")/common.bash"
backend=${KILN_TEST_BACKEND:-cpu}
cache=$tmp/cache
"$kiln" precompile "${model[@]}" --backend "$backend" --cache-dir "$cache" --num-parallel 2 >"$tmp/pre.log" 2>&1 ||
  { cat "$tmp/pre.log"; fail "precompile exited with $?"; }
cat "$tmp/pre.log"
total=$(summary "Total graphs" "$tmp/pre.log")
[ "$total" -ge 4 ] || fail "expected at least 4 unique graphs, got $total"
[ "$(summary "Total successful compilations" "$tmp/pre.log")" = "$total" ] || fail "not every graph compiled"
[ "$(summary "Total failed compilations" "$tmp/pre.log")" = 0 ] || fail "failures"
[ "$(count_files "$cache" '*.entry')" = "$total" ] || fail "expected $total entries"

"$kiln" train "${model[@]}" --backend "$backend" --cache-dir "$cache" --require-precompiled >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; fail "train --require-precompiled failed"; }
grep "compile cache:" "$tmp/train.log"
grep -q "compile cache: $(units_of "$tmp/pre.log") graphs from the cache (loading took [0-9.]* s), 0 compiled" "$tmp/train.log" ||
  fail "train compiled something after precompile"
grep -q "setup spent 0.0 s compiling (the backend compiling the 0 compile units not in the compile cache)" "$tmp/train.log" ||
  fail "the setup line does not say 0.0 s compiling after precompile"
grep -q "iteration        2/       2" "$tmp/train.log" || fail "training did not finish"

# Another micro-batch size: a miss that names the shape.
if "$kiln" train "${model[@]}" --micro-batch-size 1 --backend "$backend" --cache-dir "$cache" \
     --require-precompiled >"$tmp/miss.log" 2>&1; then
  fail "a different micro-batch size must miss"
fi
cat "$tmp/miss.log" | tail -1
grep -q "kiln: error: --require-precompiled: .*differs in shape (.*port 'tokens' is \[1, 16\] here, \[2, 16\] in the cache" "$tmp/miss.log" ||
  fail "the miss does not name the shape"

# Everything is cached now.
"$kiln" precompile "${model[@]}" --backend "$backend" --cache-dir "$cache" >"$tmp/again.log" 2>&1
[ "$(summary "Already cached" "$tmp/again.log")" = "$total" ] || { cat "$tmp/again.log"; fail "second precompile recompiled"; }

# Same keys from a separate process, other environment, other directory.
env MALLOC_PERTURB_=77 KILN_LOG_LEVEL=debug "$kiln" precompile "${model[@]}" --backend "$backend" \
  --cache-dir "$tmp/other" --num-parallel 1 >"$tmp/other.log" 2>&1
diff <(cd "$cache" && find v1 -name '*.entry' | sort) <(cd "$tmp/other" && find v1 -name '*.entry' | sort) ||
  fail "the same graphs got different keys in another process"
"$kiln" cache verify --cache-dir "$cache"
