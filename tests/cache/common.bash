# Sourced by tests/cache/*.sh: $1 kiln binary, $2 test-plugin dir, $3 plugin
# (bin) dir. Gives a scratch dir, a small model, and helpers.
set -euo pipefail
kiln=$1
test_plugins=$2
bin_dir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KILN_PLUGIN_PATH="$bin_dir:$test_plugins"
# Small and quick: 2 micro-batches (so both train-step graphs exist) and eval.
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --micro-batch-size 2
       --global-batch-size 4 --train-iters 2 --eval-iters 1 --eval-interval 2 --log-interval 1 --num-threads 1)
fail() { echo "FAIL: $*" >&2; exit 1; }
# The value of a "Name: N" summary line.
summary() { grep "^$1: " "$2" | tail -1 | sed 's/.*: //'; }
count_files() { find "$1" -name "$2" -type f 2>/dev/null | wc -l; }
# Compile units a precompile log says it extracted (duplicates included):
# what a train run then loads, one per unit (graph/compile_units.h).
units_of() { sed -n 's/^precompile: extracted [0-9]* graphs (\([0-9]*\) compile units).*/\1/p' "$1"; }
