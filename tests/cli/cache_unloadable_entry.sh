#!/usr/bin/env bash
# N55 (findings 2026-11-27): a cache entry whose checksum holds but whose
# executable the plugin cannot load used to end every run ("cpu: load
# failed: cpu executable is truncated", naming no entry), and `kiln cache
# verify --fix` called it ok; only `cache clear` recovered. Now the run
# quarantines it with a warning naming it, recompiles and trains, and
# `cache verify` loads every entry through its plugin.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cache=$tmp/cache
train() {
  "$kiln" train --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 \
    --eval-iters 0 --train-iters 1 --cache-dir "$cache" "$@"
}
train >"$tmp/first.log" 2>&1 || { cat "$tmp/first.log"; fail "first run"; }
# Damage each entry's executable section and seal it with a fresh checksum
# (compiler_cache/entry_format.h: an 80-byte header whose last 4 bytes count
# the sections, each a u32 kind and a u64 size; kind 2 is the executable;
# a SHA-256 of everything before it ends the file).
damage() {
  python3 - "$1" <<'PY' || fail "damage $1"
import hashlib, struct, sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); o = 80
for _ in range(struct.unpack_from('<I', b, 76)[0]):
    kind, size = struct.unpack_from('<IQ', b, o); o += 12
    if kind == 2: b[o + min(100, size - 1)] ^= 0xff
    o += size
b[-32:] = hashlib.sha256(b[:-32]).digest(); open(p, 'wb').write(b)
PY
}
entries=$(find "$cache/v1" -name '*.entry')
[ -n "$entries" ] || fail "the first run cached nothing"
for e in $entries; do damage "$e"; done
n=$(echo "$entries" | wc -l)

# verify (without --fix) finds them, each named, and exits 1.
"$kiln" cache verify --cache-dir "$cache" >"$tmp/verify.log" 2>&1 && { cat "$tmp/verify.log"; fail "verify exit 0"; }
[ "$(grep -c '^corrupt: .*\.entry: the cpu plugin cannot load it' "$tmp/verify.log")" -eq "$n" ] ||
  { cat "$tmp/verify.log"; fail "verify did not name all $n unloadable entries"; }

# A run goes on: each entry quarantined with a warning naming it, recompiled.
train >"$tmp/second.log" 2>&1 || { cat "$tmp/second.log"; fail "the run with unloadable entries failed"; }
grep -q 'iteration *1/ *1' "$tmp/second.log" || { cat "$tmp/second.log"; fail "no training step"; }
first=$(echo "$entries" | head -1)
grep -q "compile cache entry $first passes its checksum but the cpu plugin cannot load" "$tmp/second.log" ||
  { cat "$tmp/second.log"; fail "no warning naming $first"; }
[ "$(find "$cache/quarantine" -name '*.entry.*' ! -name '*.why' | wc -l)" -eq "$n" ] || fail "not all quarantined"
"$kiln" cache verify --cache-dir "$cache" >"$tmp/verify2.log" 2>&1 || { cat "$tmp/verify2.log"; fail "verify after"; }
grep -q ' 0 corrupt' "$tmp/verify2.log" || { cat "$tmp/verify2.log"; fail "entries still bad after the run"; }

# --fix quarantines what verify finds.
for e in $(find "$cache/v1" -name '*.entry'); do damage "$e"; done
"$kiln" cache verify --fix --cache-dir "$cache" >"$tmp/fix.log" 2>&1 || { cat "$tmp/fix.log"; fail "verify --fix"; }
grep -q "$n quarantined" "$tmp/fix.log" || { cat "$tmp/fix.log"; fail "--fix did not quarantine $n"; }
echo "ok: $n unloadable entries found, quarantined and recompiled"
