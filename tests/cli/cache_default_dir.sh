#!/usr/bin/env bash
# N66 (findings 2026-11-27): the compile cache's default directory. With no
# HOME, KILN_CACHE_DIR or XDG_CACHE_HOME, kiln silently used ./.kiln-cache
# in the working directory; a relative XDG_CACHE_HOME was used as one (the
# XDG spec says to ignore it); HOME=/nonexistent (the nobody convention) was
# created. Now a relative XDG_CACHE_HOME is ignored, a missing home is not
# created, and without a usable default kiln trains uncached with one
# warning saying so, while `kiln cache` asks for --cache-dir.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1
mkdir home work
model=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8 --micro-batch-size 1
       --global-batch-size 1 --train-iters 1 --eval-iters 0 --num-threads 1)

# No default at all: uncached, one warning, nothing created here.
(cd work && env -u HOME -u KILN_CACHE_DIR -u XDG_CACHE_HOME timeout 120 "$kiln" train "${model[@]}") >out 2>err ||
  { cat err; fail "train without HOME failed"; }
grep -q "no compile cache: \$HOME (unset) is not an existing directory" err || { cat err; fail "no warning without HOME"; }
[ -z "$(ls -A work)" ] || fail "train without HOME wrote $(ls -A work) into the working directory"
echo "ok: no HOME: uncached, with a warning"

# HOME that does not exist: not created.
env -u KILN_CACHE_DIR -u XDG_CACHE_HOME HOME="$tmp/nonexistent" timeout 120 "$kiln" train "${model[@]}" >out 2>err ||
  { cat err; fail "train with a missing HOME failed"; }
[ ! -e "$tmp/nonexistent" ] || fail "a missing HOME was created"
grep -q "no compile cache: \$HOME ($tmp/nonexistent)" err || { cat err; fail "no warning for a missing HOME"; }
echo "ok: a missing HOME is not created"

# A relative XDG_CACHE_HOME is ignored: ~/.cache/kiln is used.
(cd work && env -u KILN_CACHE_DIR HOME="$tmp/home" XDG_CACHE_HOME=rel timeout 120 "$kiln" train "${model[@]}") \
  >out 2>err || { cat err; fail "train with a relative XDG_CACHE_HOME failed"; }
[ ! -e work/rel ] || fail "a relative XDG_CACHE_HOME was used"
[ -d home/.cache/kiln ] || fail "the cache is not in \$HOME/.cache/kiln"
echo "ok: a relative XDG_CACHE_HOME is ignored"

# kiln cache with no default names the fix.
env -u HOME -u KILN_CACHE_DIR -u XDG_CACHE_HOME "$kiln" cache ls >out 2>err && fail "cache ls without a cache dir exit 0"
grep -q "kiln cache: no compile cache directory.*give --cache-dir DIR" err || { cat err; fail "cache ls: no fix named"; }
echo "ok: kiln cache without a default asks for --cache-dir"
