#!/usr/bin/env bash
# A .bin truncated under a running `kiln train` (issue 13, item 6): the file
# is mmapped, so the next read of a vanished page raised SIGBUS and the run
# died with no message. It must end with one line naming the file and a
# non-zero exit. The .bin/.idx pair is written here by python3 in Megatron's
# MMIDIDX format (docs/DATA.md); the run needs the GPT-2 tokenizer files, so
# the test is skipped without ../shared.
set -uo pipefail
kiln=$1
shared=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
if [ ! -f "$shared/gpt2/gpt2-vocab.json" ] || [ ! -f "$shared/gpt2/gpt2-merges.txt" ]; then
  echo "SKIPPED: needs $shared/gpt2 (../shared beside the project)"
  exit 0
fi
command -v python3 >/dev/null || { echo "SKIPPED: needs python3 to write the .bin/.idx"; exit 0; }
tmp=$(mktemp -d)
run=
trap '[ -n "$run" ] && kill -9 $run 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export KILN_CACHE_DIR=off

# 2000 documents of 1000 uint16 tokens each (4 MB of .bin).
python3 - "$tmp/d_text_document" <<'PY'
import random, struct, sys
prefix = sys.argv[1]
rng = random.Random(7)
docs, length = 2000, 1000
with open(prefix + ".bin", "wb") as f:
    for _ in range(docs):
        f.write(struct.pack("<%dH" % length, *(rng.randrange(50257) for _ in range(length))))
with open(prefix + ".idx", "wb") as f:
    f.write(b"MMIDIDX\0\0" + struct.pack("<Q", 1) + bytes([8]) + struct.pack("<QQ", docs, docs + 1))
    f.write(struct.pack("<%di" % docs, *([length] * docs)))
    f.write(struct.pack("<%dq" % docs, *(2 * length * i for i in range(docs))))
    f.write(struct.pack("<%dq" % (docs + 1), *range(docs + 1)))
PY

"$kiln" train --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 64 --micro-batch-size 4 \
  --train-iters 1000000 --log-interval 1 --eval-iters 0 --split 100,0,0 --data-path "$tmp/d_text_document" \
  --tokenizer-type GPT2BPETokenizer --vocab-file "$shared/gpt2/gpt2-vocab.json" \
  --merge-file "$shared/gpt2/gpt2-merges.txt" --data-cache-path "$tmp/cache" >"$tmp/out" 2>"$tmp/err" &
run=$!
for _ in $(seq 1200); do
  grep -q '^ *\[.*\] iteration' "$tmp/out" && break
  kill -0 $run 2>/dev/null || break
  sleep 0.1
done
grep -q '^ *\[.*\] iteration' "$tmp/out" || { cat "$tmp/err"; fail "training never logged an iteration"; }

truncate -s 0 "$tmp/d_text_document.bin"
# Every later sample reads the emptied file, so the run ends within a step;
# the generous bound only catches a hang.
for _ in $(seq 1200); do kill -0 $run 2>/dev/null || break; sleep 0.1; done
kill -0 $run 2>/dev/null && fail "training still runs 120 s after its .bin was truncated"
wait $run 2>/dev/null; rc=$?; run=
[ $rc -ne 0 ] || fail "training exited 0 after its .bin was truncated"
[ $rc -lt 128 ] || { cat "$tmp/err"; fail "training died of signal $((rc - 128)) with no message"; }
grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
[ "$(wc -l < "$tmp/err.lines")" -eq 1 ] || { cat "$tmp/err"; fail "expected one error line"; }
grep -q "$tmp/d_text_document.bin shrank while training read it .*; restore the file" "$tmp/err.lines" ||
  { cat "$tmp/err.lines"; fail "the line does not name the .bin and the fix"; }
echo "ok: $(cat "$tmp/err.lines")"
