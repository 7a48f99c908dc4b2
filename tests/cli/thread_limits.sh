#!/usr/bin/env bash
# Thread counts and thread-creation failure (issue 13, item 1):
# - --num-threads and --workers above 1024 are refused in one line;
# - a thread that cannot be started (KILN_TEST_FAIL_THREAD_AT, the pools'
#   test hook) ends train and preprocess with one line, exit 1;
# - under a real `ulimit -u N` (as nobody when run as root: root ignores
#   the limit), train --num-threads 16 and preprocess --workers 16 either run
#   (the counts are capped at the CPUs) or fail in one line; they never abort
#   (a half-started pool used to call std::terminate) and never hang.
# The preprocess parts are skipped without ../shared (the GPT-2 tokenizer).
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export KILN_CACHE_DIR=off
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0
       --log-interval 1 --train-iters 2)
shared=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
have_tok=0
if [ -f "$shared/gpt2/gpt2-vocab.json" ] && [ -f "$shared/gpt2/gpt2-merges.txt" ]; then
  have_tok=1
  tok=(--tokenizer-type GPT2BPETokenizer --vocab-file "$shared/gpt2/gpt2-vocab.json"
       --merge-file "$shared/gpt2/gpt2-merges.txt")
  for i in $(seq 200); do echo "{\"text\": \"document $i: the quick brown fox jumps over the lazy dog\"}"; done \
    > "$tmp/docs.jsonl"
else
  echo "SKIPPED (preprocess parts): needs $shared/gpt2 (../shared beside the project)"
fi

# expect_one_line RC_WANTED PATTERN LOG: the log's lines other than info
# lines and the cap note are exactly one, matching PATTERN.
expect_one_line() {
  grep -v -e '^\[kiln\] \[info\]' -e 'CPUs this process may use; using' "$3" > "$3.lines"
  [ "$(wc -l < "$3.lines")" -eq 1 ] || { cat "$3"; fail "expected one error line in $3"; }
  grep -q -- "$2" "$3.lines" || { cat "$3.lines"; fail "the error does not say: $2"; }
  echo "ok: $(cat "$3.lines")"
}

# Counts above the sane maximum are typos.
timeout 120 "$kiln" train "${small[@]}" --num-threads 5000 >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -eq 1 ] || fail "--num-threads 5000: exit $rc, want 1"
expect_one_line 1 "--num-threads must be in \[0, 1024\], got 5000" "$tmp/e"
timeout 120 "$kiln" preprocess --input /nonexistent --output-prefix "$tmp/x" --workers 5000 >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -eq 1 ] || fail "--workers 5000: exit $rc, want 1"
expect_one_line 1 "--workers must be in \[1, 1024\], got 5000" "$tmp/e"

# The test hook: the first worker thread of the cpu backend cannot start.
KILN_TEST_FAIL_THREAD_AT=1 timeout 120 "$kiln" train "${small[@]}" --num-threads 2 >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -eq 1 ] || { cat "$tmp/e"; fail "train with thread 1 failing: exit $rc, want 1"; }
expect_one_line 1 "cannot start thread 1 of 2: Resource temporarily unavailable; lower --num-threads" "$tmp/e"
if [ $have_tok = 1 ] && [ "$(nproc)" -ge 2 ]; then
  # Thread 1 of the preprocess pool starts, thread 2 does not: the pool
  # must join thread 1 before it reports.
  KILN_TEST_FAIL_THREAD_AT=2 timeout 120 "$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/hook" \
    "${tok[@]}" --workers 2 >/dev/null 2>"$tmp/e"; rc=$?
  [ $rc -eq 1 ] || { cat "$tmp/e"; fail "preprocess with thread 2 failing: exit $rc, want 1"; }
  expect_one_line 1 "cannot start thread 2 of 2: Resource temporarily unavailable; lower --num-threads / --workers" \
    "$tmp/e"
fi

# A real process limit. Root ignores RLIMIT_NPROC, so drop to nobody.
# (Under ASan, LeakSanitizer's exit-time check starts a thread of its own,
# which the limit forbids: leaks are checked by the other tests.)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  command -v setpriv >/dev/null || { echo "SKIPPED (ulimit -u parts): root without setpriv"; exit 0; }
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
# limited N CMD...: CMD under ulimit -u N, killed if it hangs.
limited() { local n=$1; shift; timeout 120 "${as_user[@]}" bash -c 'ulimit -u "$0" && exec "$@"' "$n" "$@"; }
# check_limited WHAT N RC: ran (exit 0, only where N > 1: the counts are
# capped at the CPUs) or failed in one line; never a hang or a signal.
check_limited() {
  [ "$3" -eq 124 ] && fail "$1 under ulimit -u $2 hung"
  [ "$3" -ge 128 ] && { cat "$tmp/e"; fail "$1 under ulimit -u $2 died of signal $(($3 - 128))"; }
  if [ "$3" -ne 0 ] || [ "$2" -eq 1 ]; then
    [ "$3" -eq 1 ] || { cat "$tmp/e"; fail "$1 under ulimit -u $2: exit $3, want 1"; }
    expect_one_line 1 "cannot start thread" "$tmp/e"
  fi
}
chmod 755 "$tmp"; mkdir -m 777 "$tmp/out"
for n in 1 2 3 4; do
  limited $n "$kiln" train "${small[@]}" --num-threads 16 >/dev/null 2>"$tmp/e"
  check_limited train $n $?
  [ $have_tok = 1 ] || continue
  limited $n "$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/out/p$n" "${tok[@]}" --workers 16 \
    >/dev/null 2>"$tmp/e"
  check_limited preprocess $n $?
done
echo "ok: under ulimit -u 1..4 train and preprocess ran or failed in one line"
