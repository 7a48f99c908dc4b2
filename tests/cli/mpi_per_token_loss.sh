#!/usr/bin/env bash
# Megatron's --calculate-per-token-loss (NVIDIA's Llama-3 8B FP8 example):
# the loss and its gradient are the mean over every token of the global
# batch that counts, not a mean of micro-batch means. With --eod-mask-loss
# on packed documents the micro-batches keep different token counts k_m, so
#   1. one step at lr 0 with and without the flag (the same parameters): each
#      micro-batch's loss and f32 parameter gradients (KILN_TEST_DUMP_BATCHES,
#      KILN_TEST_DUMP_GRADIENTS) with it are those without it times
#      k_m / N, N = the global batch's kept tokens (counted here from the
#      dumped tokens), and the logged loss is sum(loss_m k_m) / N;
#   2. DP=2 (each rank counts its share, summed over the ranks): every
#      rank's micro-batch gradients are one process's for the same samples,
#      which holds only with the global N;
#      PP=2 follows one process, its validation loss too;
#   3. without --eod-mask-loss every micro-batch counts all its tokens, and
#      the run is the default one exactly.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tokenizer=$(cd "$(dirname "$0")/../data/tokenizers/llama3_style" && pwd)

# Runs of one-word documents between long ones, so micro-batches keep very different counts.
"$py" - "$tmp/docs.jsonl" <<'PY'
import json, random, sys
rng = random.Random(37)
words = "the a of to in is was he she it on for with as his her at by not but from they".split()
with open(sys.argv[1], "w") as out:
    for _ in range(300):
        out.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(rng.choice([1, 1, 1, 1, 60])))}) + "\n")
PY
"$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/docs" --tokenizer-type HuggingFaceTokenizer \
  --tokenizer-model "$tokenizer" --append-eod --workers 1 >/dev/null 2>&1
common=(--data-path "$tmp/docs_text_document" --tokenizer-type HuggingFaceTokenizer --tokenizer-model "$tokenizer"
        --split 100,0,0 --seq-length 32 --micro-batch-size 2 --global-batch-size 8 --eval-iters 0 --log-interval 1
        --hidden-dropout 0 --attention-dropout 0 --num-threads 1 --num-layers 2 --hidden-size 32
        --num-attention-heads 4 --init-method-std 0.3)
one_step=(--train-iters 1 --lr 0 --min-lr 0)

run() {  # name launch... -- flags...: one step with both dumps and the metrics
  local name=$1; shift
  local launch=()
  while [ "$1" != -- ]; do launch+=("$1"); shift; done
  shift
  mkdir "$tmp/$name"
  KILN_TEST_DUMP_GRADIENTS="$tmp/$name" KILN_TEST_DUMP_BATCHES="$tmp/$name/batches" "${launch[@]}" "$kiln" train \
    "${common[@]}" "${one_step[@]}" "$@" --metrics-file "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1 ||
    { cat "$tmp/$name.log"; echo "FAIL: $name"; exit 1; }
}
run mean -- --eod-mask-loss
run token -- --eod-mask-loss --calculate-per-token-loss
run token_dp2 mpi 2 -- --eod-mask-loss --calculate-per-token-loss
grep -q -- "--calculate-per-token-loss: each token's loss weighs 1 / the global batch's kept tokens" \
  "$tmp/token.log" || { cat "$tmp/token.log"; echo "FAIL: no per-token start-up line"; exit 1; }
eod=$(sed -n 's/.*documents (EOD id \([0-9]*\)): no loss where the input is EOD$/\1/p' "$tmp/mean.log")
[ -n "$eod" ] || { cat "$tmp/mean.log"; echo "FAIL: no documents line with the EOD id"; exit 1; }

"$py" - "$(dirname "$0")" "$tmp" "$eod" <<'PY'
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from bf16_main_grads_reference import read_manifest, read_dump
tmp, eod = sys.argv[2], int(sys.argv[3])

def batches(run):  # [(tokens, loss)] of rank 0's micro-batches
    out = []
    for line in open(f"{tmp}/{run}/batches"):
        head, _, loss = line.split("|")
        out.append(([int(w) for w in head.split()[2:]], float(loss)))
    return out

def grads(run, rank=0):
    params = read_manifest(f"{tmp}/{run}/params.txt")
    return read_dump(f"{tmp}/{run}/rank{rank}.bin", params, 4)[1]["G"]

def worst(a, b):
    return max(float(np.max(np.abs(x - y)) / max(float(np.max(np.abs(y))), 1e-30)) for x, y in zip(a, b))

mean, token = batches("mean"), batches("token")
kept = [sum(1 for t in tokens if t != eod) for tokens, _ in mean]
N = sum(kept)
assert len(set(kept)) > 1, f"every micro-batch keeps {kept[0]} tokens: the test cannot tell"
print(f"kept tokens per micro-batch {kept}, N = {N}")
for m, ((_, a), (_, b)) in enumerate(zip(mean, token)):
    want = a * kept[m] / N
    assert abs(b - want) <= 1e-6 * abs(want), (m, b, want)
logged = lambda run: json.loads(open(f"{tmp}/{run}.jsonl").readline())["lm_loss"]
want = sum(a * k for (_, a), k in zip(mean, kept)) / N
assert abs(logged("token") - want) <= 1e-6 * want, (logged("token"), want)
assert abs(logged("token") - logged("mean")) > 1e-4 * want, (logged("token"), logged("mean"), "cannot tell")
print(f"1. losses: logged {logged('token'):.7g} = sum(loss_m k_m) / N (mean of means {logged('mean'):.7g})")
G_mean, G_token = grads("mean"), grads("token")
w = max(worst(gt, [g * np.float32(kept[m] / N) for g in gm]) for m, (gm, gt) in enumerate(zip(G_mean, G_token)))
assert w <= 1e-5, f"per-token gradients differ from k_m / N times the mean's by {w:.3g}"
print(f"1. gradients: each micro-batch's are k_m / N times the mean-of-means ones (largest relative difference {w:.2g})")
# DP=2: rank r's micro-batch m holds samples (2m + r) x 2, one process's micro-batch 2m + r.
w = 0.0
for r in range(2):
    for m, g in enumerate(grads("token_dp2", r)):
        w = max(w, worst(g, G_token[2 * m + r]))
assert w <= 1e-6, f"DP=2 per-token gradients differ from one process's by {w:.3g}"
print(f"2. DP=2: every rank's micro-batch gradients are one process's (largest relative difference {w:.2g})")
PY

# 2b. PP=2 (the last stage weighs the loss; every stage counts) follows one process, with evaluation.
steps=(--train-iters 4 --lr 1e-2 --eod-mask-loss --calculate-per-token-loss --split 90,10,0 --eval-iters 1
       --eval-interval 2)
"$kiln" train "${common[@]}" "${steps[@]}" --metrics-file "$tmp/one.jsonl" >"$tmp/one.log" 2>&1
mpi 2 "$kiln" train "${common[@]}" "${steps[@]}" --pipeline-model-parallel-size 2 --metrics-file "$tmp/pp2.jsonl" \
  >"$tmp/pp2.log" 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/pp2.jsonl" 4 "--calculate-per-token-loss PP=2 vs 1 process" 1e-6
[ "$(grep -o 'lm loss value: [^ ]*' "$tmp/one.log")" = "$(grep -o 'lm loss value: [^ ]*' "$tmp/pp2.log")" ] ||
  { grep 'lm loss value' "$tmp/one.log" "$tmp/pp2.log"; echo "FAIL: PP=2 validation differs"; exit 1; }

# 3. No --eod-mask-loss: the default run.
"$kiln" train "${common[@]}" --train-iters 4 --lr 1e-2 --metrics-file "$tmp/a.jsonl" >/dev/null 2>&1
"$kiln" train "${common[@]}" --train-iters 4 --lr 1e-2 --calculate-per-token-loss --metrics-file "$tmp/b.jsonl" \
  >"$tmp/b.log" 2>&1
[ "$(losses "$tmp/a.jsonl")" = "$(losses "$tmp/b.jsonl")" ] ||
  { echo "FAIL: --calculate-per-token-loss without --eod-mask-loss changed the run"; exit 1; }
grep -q "every token counts (no --eod-mask-loss)" "$tmp/b.log" || { cat "$tmp/b.log"; exit 1; }
echo "3. without --eod-mask-loss: the same 4 losses as the default"
echo "--calculate-per-token-loss: per-token weights, DP=2 and the plain case pass"
