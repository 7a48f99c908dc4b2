#!/usr/bin/env bash
# --tensorboard-dir writes event files TensorBoard can read: an independent
# reader (tests/tools/read_tfevents.py, standard library only) checks every
# record's CRCs and decodes the Event protobufs; the scalars are the logged
# values (lm loss equals the metrics file's, to float precision).
set -euo pipefail
kiln=$1
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$kiln" train --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2 \
  --train-iters 6 --log-interval 2 --eval-iters 1 --eval-interval 3 --num-threads 1 \
  --tensorboard-dir "$tmp/tb" --metrics-file "$tmp/m.jsonl" >/dev/null
files=("$tmp"/tb/events.out.tfevents.*)
[ "${#files[@]}" = 1 ] || { echo "expected one event file, got ${files[*]}"; exit 1; }
python3 "$(dirname "$0")/../tools/read_tfevents.py" "${files[0]}" >"$tmp/scalars.txt"
for tag in lm_loss learning-rate grad-norm throughput/tokens-per-sec iteration-time lm_loss_validation; do
  grep -q " $tag " "$tmp/scalars.txt" || { echo "no scalar '$tag':"; cat "$tmp/scalars.txt"; exit 1; }
done
# Steps 2, 4, 6 carry the logged loss; compare with the JSONL metrics.
paste <(awk '$2 == "lm_loss" { print $1, $3 }' "$tmp/scalars.txt") \
      <(grep -o '"iteration":[0-9]*\|"lm_loss":[^,]*' "$tmp/m.jsonl" | cut -d: -f2 | paste -d' ' - -) | awk '
  { d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-6 * $4) bad = 1; n++ }
  END { printf "%d lm loss scalars match the metrics file\n", n; exit bad || n != 3 }'
grep -q "^6 lm_loss_validation " "$tmp/scalars.txt" || { echo "no validation loss at step 6"; exit 1; }
echo "event file: $(wc -l <"$tmp/scalars.txt") scalars, all CRCs valid"
