"""What the independent NumPy references of Hugging Face models share
(hf_gpt2_numpy.py, hf_llama_numpy.py): reading an exported directory
(config.json and model.safetensors, or an index and its shards; F32, F16
and BF16 widened exactly) and the command-line driver. Tokens are bytes
(kiln's vocab-256 models).

  SCRIPT logits DIR PROMPT       the last position's logits, JSON
  SCRIPT greedy DIR PROMPT N     N greedy bytes after PROMPT
  SCRIPT tensors DIR             name dtype shape, one line each
"""
import json
import os
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        dtype = info["dtype"]
        if dtype == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif dtype == "F16":
            a = np.frombuffer(raw, dtype="<f2")
        elif dtype == "BF16":  # the top half of a float32
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit(f"{path}: {name} has dtype {dtype}, not F32/F16/BF16")
        out[name] = (dtype, a.reshape(info["shape"]))
    return out


def load_dir(d):
    with open(os.path.join(d, "config.json")) as f:
        config = json.load(f)
    single = os.path.join(d, "model.safetensors")
    tensors = {}
    if os.path.exists(single):
        tensors = read_safetensors(single)
    else:
        with open(os.path.join(d, "model.safetensors.index.json")) as f:
            index = json.load(f)
        for shard in sorted(set(index["weight_map"].values())):
            tensors.update(read_safetensors(os.path.join(d, shard)))
        assert set(tensors) == set(index["weight_map"]), "index and shards disagree"
    return config, tensors


def main(forward):
    """forward(config, tensors, ids) -> logits [T, vocab] in float64."""
    cmd, d = sys.argv[1], sys.argv[2]
    config, tensors = load_dir(d)
    if cmd == "tensors":
        for name in sorted(tensors):
            dtype, a = tensors[name]
            print(name, dtype, list(a.shape))
        return
    ids = list(sys.argv[3].encode())
    if cmd == "logits":
        print(json.dumps([float(x) for x in forward(config, tensors, ids)[-1]]))
    elif cmd == "greedy":
        for _ in range(int(sys.argv[4])):
            ids.append(int(np.argmax(forward(config, tensors, ids)[-1])))
        sys.stdout.buffer.write(bytes(ids))
    else:
        raise SystemExit(f"unknown command {cmd}")
