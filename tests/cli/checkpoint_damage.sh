#!/usr/bin/env bash
# A damaged checkpoint fails in one line naming the file, the key or tensor,
# and the fix, for every command that reads it (issue 36: C9, C11c, C11d,
# C14c, C14d, C25, C25b, G9, G11):
# - meta.json without "config", or with a config value of the wrong type;
# - latest_checkpointed_iteration.txt with more digits than an int64 holds,
#   or a directory of that name;
# - a tensor renamed in model.safetensors' header, or its dtype changed;
# - parameters that are NaN or infinite (generate printed NUL bytes with
#   status 0; train ran into skipped steps and blamed --lr or the data).
# And generate and export, which need the model only, load a checkpoint
# whose optimizer.safetensors is gone; a resume still refuses it.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
expect_error() {
  local want=$1; shift
  "$kiln" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
  local lines=$(wc -l <"$tmp/err.lines")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err.lines" || [ -s "$tmp/out" ]; then
    echo "FAIL: kiln $* -> rc=$rc, want '$want', stderr ($lines lines):"; cat "$tmp/err"; fails=$((fails+1))
  else
    echo "ok: $(cat "$tmp/err.lines")"
  fi
}
expect_ok() {
  "$kiln" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$tmp/out" ]; then
    echo "FAIL: kiln $* -> rc=$rc:"; cat "$tmp/err"; fails=$((fails+1))
  else
    echo "ok: kiln $1 succeeded"
  fi
}
# --log-interval and the eval flags explicit: their defaults are changing.
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2
       --log-interval 1 --eval-interval 100 --eval-iters 0)
"$kiln" train "${small[@]}" --train-iters 2 --save "$tmp/ck" >"$tmp/good.out" 2>&1 ||
  { cat "$tmp/good.out"; echo "FAIL: the good run failed"; exit 1; }
# Each case damages a fresh copy; every command that loads it must refuse it.
fresh() { rm -rf "$tmp/$1"; cp -r "$tmp/ck" "$tmp/$1"; echo "$tmp/$1/iter_0000002"; }
resume=(train "${small[@]}" --train-iters 3 --override-opt_param-scheduler --load)
all_refuse() {
  local want=$1 c=$2
  expect_error "$want" generate --load "$c" --prompt x --max-new-tokens 2
  expect_error "$want" export --load "$c" --format hf --output "$tmp/export-out"
  expect_error "$want" "${resume[@]}" "$c"
}
meta_edit() {  # file, python statement on m
  python3 -c "import json; m=json.load(open('$1')); $2; json.dump(m, open('$1','w'))"
}

d=$(fresh c11c); meta_edit "$d/meta.json" "del m['config']"
all_refuse "checkpoint $d/meta.json has no \"config\"" "$tmp/c11c"
d=$(fresh c11d); meta_edit "$d/meta.json" "m['config']['layernorm_epsilon']='x'"
all_refuse "checkpoint $d/meta.json has no valid model config: \"config\" key 'layernorm_epsilon' is \"x\", not a number" "$tmp/c11d"

fresh c14c >/dev/null; python3 -c "print('9'*76, end='')" > "$tmp/c14c/latest_checkpointed_iteration.txt"
all_refuse "latest_checkpointed_iteration.txt names iteration '$(python3 -c "print('9'*76)")', more than kiln can count" "$tmp/c14c"
# Zero padding is still the number it pads (Python's int() reads it so too).
printf '%076d' 2 > "$tmp/c14c/latest_checkpointed_iteration.txt"
expect_ok generate --load "$tmp/c14c" --prompt x --max-new-tokens 2
fresh c14d >/dev/null; rm "$tmp/c14d/latest_checkpointed_iteration.txt"; mkdir "$tmp/c14d/latest_checkpointed_iteration.txt"
all_refuse "latest_checkpointed_iteration.txt is a directory, not the file holding the latest iteration number; remove it" "$tmp/c14d"

# Header edits that keep every size: the payload stays where it was.
header_edit() {  # file, python statement on h (the header) and k (a tensor name)
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
p, stmt = sys.argv[1], sys.argv[2]
b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
k = 'decoder.final_layernorm.bias'
assert k in h, sorted(h)
exec(stmt)
x = json.dumps(h, separators=(',', ':')).encode(); x += b' ' * (-len(x) % 8)
open(p, 'wb').write(struct.pack('<Q', len(x)) + x + b[8 + n:])
PY
}
d=$(fresh c25); header_edit "$d/model.safetensors" "h[k + '_x'] = h.pop(k)"
all_refuse "$d/model.safetensors holds tensor 'decoder.final_layernorm.bias_x' [32], which the model does not have" "$tmp/c25"
d=$(fresh c25b); header_edit "$d/model.safetensors" "h[k]['dtype'] = 'I32'"
all_refuse "checkpoint $d/model.safetensors tensor 'decoder.final_layernorm.bias' has dtype I32, but kiln saves F32" "$tmp/c25b"

# NaN in some values of one tensor, then in every tensor.
nan_fill() {  # file, tensor name or '*', how many values (0: all)
  python3 - "$1" "$2" "$3" <<'PY'
import json, struct, sys
p, which, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = bytearray(open(p, 'rb').read()); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
for name, e in h.items():
    if name == '__metadata__' or (which != '*' and name != which): continue
    lo, hi = e['data_offsets']; lo += 8 + n; hi += 8 + n
    stop = hi if count == 0 else min(hi, lo + 4 * count)
    for o in range(lo, stop, 4): b[o:o + 4] = struct.pack('<f', float('nan'))
open(p, 'wb').write(b)
PY
}
d=$(fresh g11); nan_fill "$d/model.safetensors" decoder.final_layernorm.bias 7
all_refuse "checkpoint $d/model.safetensors holds NaN or infinite parameters: 'decoder.final_layernorm.bias' (7 of 32 values); nothing can be trained or sampled from them: point --load at an earlier checkpoint" "$tmp/g11"
d=$(fresh g11all); nan_fill "$d/model.safetensors" '*' 0
all_refuse "checkpoint $d/model.safetensors holds NaN or infinite parameters: " "$tmp/g11all"
grep -q "more tensors" "$tmp/err" || { echo "FAIL: an all-NaN model is not summed up: $(cat "$tmp/err")"; fails=$((fails+1)); }

# G9: the model alone serves generate and export.
fresh g9 >/dev/null; rm "$tmp/g9/iter_0000002/optimizer.safetensors"
expect_ok generate --load "$tmp/g9" --prompt x --max-new-tokens 2
expect_ok export --load "$tmp/g9" --format hf --output "$tmp/g9-export"
expect_error "is incomplete: optimizer.safetensors is missing" "${resume[@]}" "$tmp/g9"
exit $fails
