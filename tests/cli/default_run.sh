#!/usr/bin/env bash
# The embedded default job as `make run` runs it (the Makefile's DEMO_FLAGS)
# learns: the loss starts near ln(256) = 5.55 and ends well below it, with a
# validation loss below 2.
# Not under ASan: slow (the 300-step default job), and every path it takes
#   runs under ASan in shorter tests.
set -euo pipefail
kiln=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
read -r -a demo <<<"$(sed -n 's/^DEMO_FLAGS ?= //p' "$root/Makefile")"
[ "${#demo[@]}" -gt 0 ] || { echo "no DEMO_FLAGS line in $root/Makefile"; exit 1; }
echo "make run's flags: ${demo[*]}"
"$kiln" train "${demo[@]}" --metrics-file "$tmp/m.jsonl" | tee "$tmp/log" | grep -E "iteration +(10|100|200|300)/" || true
first=$(head -1 "$tmp/m.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
last=$(tail -1 "$tmp/m.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
valid=$(grep "validation loss at iteration 300 " "$tmp/log" | grep -o 'lm loss value: [^ ]*' | cut -d' ' -f4)
echo "first logged loss $first, last $last, validation loss at 300 $valid"
awk -v f="$first" -v l="$last" -v v="$valid" 'BEGIN { exit !(f > 4.0 && l < 2.0 && v != "" && v < 2.0) }' ||
  { echo "loss did not fall enough"; exit 1; }
