#!/usr/bin/env python3
"""Prints kiln's docs (English prose, always present) as JSONL for kiln
preprocess: one {"text": ...} document per paragraph of every docs/*.md.

Run: tests/tools/docs_jsonl.py > docs.jsonl
"""
import glob
import json
import os

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
for path in sorted(glob.glob(os.path.join(DOCS, "*.md"))):
    for paragraph in open(path, encoding="utf-8").read().split("\n\n"):
        if paragraph.strip():
            print(json.dumps({"text": paragraph}))
