#!/usr/bin/env python3
"""Writes tests/data/tokenizers/nfc_goldens.jsonl: {"text", "nfc"} pairs from
Python's unicodedata.normalize("NFC", ...) (Debian's python3; its Unicode
version must be the one trainer/data/tokenizers/hf/gen_nfc_tables.py used),
the reference for kiln's NFC normalizer. Run from the repository root:
    python3 tests/tools/gen_nfc_goldens.py
"""
import json
import os
import random
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [
    "", "plain ASCII", "caf\u00e9", "cafe\u0301", "A\u030a", "\u212b ngstr\u00f6m sign", "\u2126 ohm sign",
    "e\u0301\u0323", "e\u0323\u0301", "a\u0328\u0301", "a\u0301\u0328", "\u1e0b\u0323", "d\u0307\u0323",
    "\u1100\u1161", "\u1100\u1161\u11a8", "\uac00\u11a8", "\u1100\u1161 \u1112\u1175\u11c2", "\ud55c\uad6d\uc5b4",
    "\u0958\u0959 (excluded)", "\u0915\u093c", "Vi\u1ec7t Nam", "Vie\u0323\u0302t Nam", "Vie\u0302\u0323t",
    "\u0301 leading mark", "x\u0301\u0301\u0301", "\u00c5\u0301", "\u0041\u030a\u0301", "\u1e9b\u0323",
    "\u0f73 tibetan", "\u0b47\u0b3e oriya", "\u09c7\u09be bengali", "\u3071 \u306f\u309a", "\uff76\uff9e halfwidth",
    "\u2fb8 (CJK compatibility?)", "\uf900 \uf9ff", "\U0001d15e\U0001d165", "\u05d1\u05bc hebrew",
    "\u0627\u0653 arabic", "\u1026 \u1025\u102e myanmar", "z\u0327\u030c", "o\u031b\u0300\u0323",
]


def main():
    rng = random.Random(3)
    pool = ["a", "e", "o", "A", "\u0300", "\u0301", "\u0302", "\u0303", "\u0308", "\u0323", "\u0327", "\u031b",
            "\u0345", "\u03b9", "\u1100", "\u1161", "\u11a8", "\uac00", " ", "\u00e9"]
    cases = list(CASES)
    for _ in range(40):
        cases.append("".join(rng.choice(pool) for _ in range(rng.randint(3, 12))))
    with open(os.path.join(HERE, "..", "data", "tokenizers", "nfc_goldens.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"unicode": unicodedata.unidata_version}) + "\n")
        for text in cases:
            f.write(json.dumps({"text": text, "nfc": unicodedata.normalize("NFC", text)}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
