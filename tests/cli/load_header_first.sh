#!/usr/bin/env bash
# N105: --load (and kiln export/generate, which load the same way) compare
# a checkpoint's safetensors header with the model in its meta.json before
# reading any payload. Before, a header claiming an extra 4 GiB tensor (the
# file sparse, 4 GiB of holes) was read whole: 4.2 GB of memory and 16 s,
# and then the run resumed. Now it is refused in one line naming the
# tensor, with peak RSS far below the claim. kiln import reads only the
# tensors config.json's model needs: an extra claim is skipped unread, a
# needed tensor re-declared as 4 GiB is refused before its payload is read.
# Usage: load_header_first.sh <path-to-kiln>
set -uo pipefail
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
model=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 8 --micro-batch-size 1
       --global-batch-size 1 --eval-iters 0 --log-interval 1000 --num-threads 1)
timeout 120 "$kiln" train "${model[@]}" --train-iters 1 --save "$tmp/ck" >/dev/null 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "the reference run failed"; }

# $1: a checkpoint copy or a safetensors file, $2: a tensor name, $3: its
# shape as JSON, $4: "add" (a new tensor) or "resize" (re-declare an
# existing one); the file grows by the claimed bytes as a hole.
claim() {
  python3 - "$@" <<'PY'
import glob, json, struct, sys
ck, name, shape, mode = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
p = ck if ck.endswith(".safetensors") else sorted(glob.glob(ck + "/iter_*/model.safetensors"))[-1]
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h, pay = json.loads(b[8:8 + n]), b[8 + n:]
size = 4
for d in shape:
    size *= d
if mode == "resize":
    del h[name]  # its bytes stay in the payload, tiled by the new claim below
    pay = b""  # every other tensor is re-laid after it
    rest = json.loads(b[8:8 + n])
    off = 0
    for k, v in sorted(rest.items()):
        if k == "__metadata__" or k == name:
            continue
        s, e = v["data_offsets"]
        pay += b[8 + n + s:8 + n + e]
        h[k] = dict(v, data_offsets=[off, off + e - s])
        off += e - s
h[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(pay), len(pay) + size]}
x = json.dumps(h).encode()
x += b" " * (-len(x) % 8)
with open(p, "wb") as f:
    f.write(struct.pack("<Q", len(x)) + x + pay)
    f.truncate(8 + len(x) + len(pay) + size)
PY
}

# $1: a name, $2: text of the one error line; the rest: the command. Peak
# RSS must stay under $limit_kb (the claims are 4 GiB).
expect_refused_small() {
  local name=$1 text=$2
  shift 2
  timeout 120 /usr/bin/time -f 'maxrss_kb %M' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -ne 124 ] || fail "$name: hung"
  [ $rc -ne 0 ] || fail "$name: exit 0"
  [ "$(grep -ci error "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$name: not one error line"; }
  local line rss
  line=$(tail -1 "$tmp/err")
  [[ $line == "kiln: error: "*"$text"* ]] || fail "$name: '$line' does not hold '$text'"
  rss=$(awk '/^maxrss_kb/ { print $2 }' "$tmp/time")
  [ -n "$rss" ] && [ "$rss" -lt "$limit_kb" ] || fail "$name: peak RSS ${rss:-?} kB, not under $limit_kb kB"
  echo "ok: $name (peak RSS $rss kB): $line"
}

if [ -x /usr/bin/time ]; then :; else echo "/usr/bin/time missing"; exit 77; fi
resume=(train "${model[@]}" --train-iters 2 --override-opt_param-scheduler)
# The bound: 200 MB, or a refusal of a 16-byte claim plus 100 MB where that
# alone is bigger (a sanitizer build's overhead).
limit_kb=204800
cp -r "$tmp/ck" "$tmp/tiny" && claim "$tmp/tiny" zzz.tiny '[4]' add
expect_refused_small "extra 16-byte tensor" "holds tensor 'zzz.tiny' [4]" "$kiln" "${resume[@]}" --load "$tmp/tiny"
baseline_kb=$(awk '/^maxrss_kb/ { print $2 }' "$tmp/time")
[ $((baseline_kb + 102400)) -le $limit_kb ] || limit_kb=$((baseline_kb + 102400))
cp -r "$tmp/ck" "$tmp/giant" && claim "$tmp/giant" zzz.giant '[1048576, 1024]' add
file=$tmp/giant/iter_0000001/model.safetensors
[ "$(stat -c %s "$file")" -gt 4294967296 ] || fail "the claim did not grow the file"
expect_refused_small "extra 4 GiB tensor" "$file holds tensor 'zzz.giant' [1048576,1024], which the model does not have" \
  "$kiln" "${resume[@]}" --load "$tmp/giant"
expect_refused_small "export of it" "holds tensor 'zzz.giant'" \
  "$kiln" export --load "$tmp/giant" --format hf --output "$tmp/never"
cp -r "$tmp/ck" "$tmp/big" && claim "$tmp/big" decoder.final_layernorm.bias '[1048576, 1024]' resize
file=$tmp/big/iter_0000001/model.safetensors
expect_refused_small "a known tensor re-declared as 4 GiB" \
  "$file tensor 'decoder.final_layernorm.bias' has shape [1048576,1024], the model needs [16]" \
  "$kiln" "${resume[@]}" --load "$tmp/big"
# The untouched checkpoint still resumes.
timeout 120 "$kiln" "${resume[@]}" --load "$tmp/ck" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "resume failed"; }
echo "ok: the intact checkpoint resumes"

# kiln import: an HF directory (kiln's own export) with the same claims.
timeout 120 "$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >/dev/null 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "export failed"; }
cp -r "$tmp/hf" "$tmp/hf_extra" && claim "$tmp/hf_extra/model.safetensors" zzz.giant '[1048576, 1024]' add
timeout 120 /usr/bin/time -f 'maxrss_kb %M' -o "$tmp/time" "$kiln" import --format hf --input "$tmp/hf_extra" \
  --save "$tmp/imported" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "import with an extra tensor failed"; }
rss=$(awk '/^maxrss_kb/ { print $2 }' "$tmp/time")
[ "$rss" -lt "$limit_kb" ] || fail "import skipping a 4 GiB extra: peak RSS $rss kB, not under $limit_kb kB"
echo "ok: import skips an extra 4 GiB tensor unread (peak RSS $rss kB)"
cp -r "$tmp/hf" "$tmp/hf_big" && claim "$tmp/hf_big/model.safetensors" transformer.ln_f.bias '[1048576, 1024]' resize
expect_refused_small "import of a needed tensor re-declared as 4 GiB" \
  "$tmp/hf_big/model.safetensors tensor 'transformer.ln_f.bias' has shape [1048576,1024], the model needs [16]" \
  "$kiln" import --format hf --input "$tmp/hf_big" --save "$tmp/never_imported"
[ ! -e "$tmp/never_imported" ] || fail "the refused import wrote $tmp/never_imported"
