#!/usr/bin/env bash
# The embedded default job (what `make run` runs) learns: the loss starts
# near ln(256) = 5.55 and ends well below it.
# Not under ASan: slow (the 300-step default job), and every path it takes
#   runs under ASan in shorter tests.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$kiln" train --metrics-file "$tmp/m.jsonl" | tee "$tmp/log" | grep -E "iteration +(10|100|200|300)/" || true
first=$(head -1 "$tmp/m.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
last=$(tail -1 "$tmp/m.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
echo "first logged loss $first, last $last"
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 4.0 && l < 2.0) }' || { echo "loss did not fall enough"; exit 1; }
grep -q "validation loss at iteration" "$tmp/log"
