#!/usr/bin/env python3
"""Writes the small Hugging Face tokenizer.json files kiln's tests use.

  tests/data/tokenizers/llama3_style/   tokenizer.json + tokenizer_config.json
      Llama-3's layout: Split(Llama-3 pattern, Isolated) + ByteLevel(use_regex
      false), a byte-level BPE with ignore_merges, <|begin_of_text|> added by
      TemplateProcessing, special tokens (a few reserved ones, one with
      lstrip/rstrip) and a ByteLevel decoder.
  tests/data/tokenizers/llama2_style/   tokenizer.json + tokenizer_config.json
      a SentencePiece-converted layout: Prepend("▁") + Replace(" ", "▁")
      normalizers, no pre-tokenizer, BPE with byte_fallback and fuse_unk,
      <s> from TemplateProcessing, decoders Replace/ByteFallback/Fuse/Strip.

The merges are learned here by a plain BPE trainer (most frequent pair
first, ties by first appearance) on text this script writes itself, plus the
first 200 KB of tiny Shakespeare when ../shared is present. The committed
files are what the tests use; regenerating may give other merges.

Usage: python3 tests/tools/gen_hf_test_tokenizers.py   (needs python3-regex)
"""

import collections
import json
import os

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "tokenizers")
SHAKESPEARE = os.path.join(HERE, "..", "..", "..", "shared", "data", "corpus", "tinyshakespeare.txt")

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

GENERATED = """\
The quick brown fox jumps over the lazy dog. It's 2024; we'll train 1234567 tokens.
Numbers: 3.14159, 2,718,281 and 1000000007. Dates 2023-11-05, times 12:34:56.
Le café était très bon, à côté de l'hôtel. Über die Brücke gehen Mädchen.
El niño comió piñata. Ça va? Où est la gare? Ελληνικά γράμματα και λέξεις.
Русский текст для проверки: привет, мир! Как дела? Съешь же ещё этих булок.
日本語のテキストです。東京は大きい都市です。中文文本，你好世界。한국어 문장입니다.
Emoji: 😀 😃 🎉 👍🏽 ❤️ 🚀✨ and symbols ©®™ → ← ∑ ∞ ≈ ≠ ± × ÷.
def main(argv):\n    return sum(x * 2 for x in range(10))  # code\n\tindented\ttabs
"""


def byte_alphabet():
    """GPT-2's bytes_to_unicode: byte -> printable character."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


def training_text():
    text = GENERATED * 40
    if os.path.exists(SHAKESPEARE):
        with open(SHAKESPEARE, encoding="utf-8") as f:
            text += f.read(200_000)
    return text


def learn_merges(words, n_merges):
    """words: {tuple of symbols: count}. Returns merges [(a, b)] best first."""
    words = {tuple(w): c for w, c in words.items()}
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for i in range(len(w) - 1):
                pairs[(w[i], w[i + 1])] += c
        if not pairs:
            break
        best_count = max(pairs.values())
        if best_count < 2:
            break
        best = min((p for p, c in pairs.items() if c == best_count))
        merges.append(best)
        merged = best[0] + best[1]
        new_words = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(merged)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] = new_words.get(tuple(out), 0) + c
        words = new_words
    return merges


def added(id_, content, special=True, lstrip=False, rstrip=False, single_word=False, normalized=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def write(dirname, tokenizer, config):
    d = os.path.join(OUT, dirname)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=1)
        f.write("\n")


def llama3_style(text):
    alpha = byte_alphabet()
    words = collections.Counter()
    for piece in regex.findall(LLAMA3_PATTERN, text):
        words["".join(alpha[b] for b in piece.encode("utf-8"))] += 1
    merges = learn_merges({tuple(w): c for w, c in words.items()}, 1500)
    vocab = {alpha[b]: i for i, b in enumerate(sorted(alpha, key=lambda b: alpha[b]))}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    n = len(vocab)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                "<|reserved_special_token_1|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    added_tokens = [added(n + i, s) for i, s in enumerate(specials)]
    # One token with lstrip/rstrip (as RoBERTa's <mask>), to test them.
    added_tokens.append(added(n + len(specials), "<|mask|>", lstrip=True, rstrip=True))
    bos = n
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                      {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                      {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [bos],
                                                      "tokens": ["<|begin_of_text|>"]}}}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "clean_up_tokenization_spaces": False,
              "model_max_length": 131072, "tokenizer_class": "PreTrainedTokenizerFast"}
    write("llama3_style", tokenizer, config)


def llama2_style(text):
    words = collections.Counter()
    norm = "▁" + text.replace(" ", "▁")
    for piece in regex.findall(r"▁?[^▁]+|▁", norm):
        words[piece] += 1
    chars = collections.Counter(c for w, k in words.items() for c in w for _ in range(k))
    alphabet = sorted(c for c, k in chars.items() if k >= 20)  # rarer characters go by byte fallback
    kept = {w: c for w, c in words.items() if all(ch in alphabet for ch in w)}
    merges = learn_merges({tuple(w): c for w, c in kept.items()}, 1000)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for c in alphabet:
        vocab.setdefault(c, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }
    config = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True,
              "add_eos_token": False, "clean_up_tokenization_spaces": False, "legacy": True,
              "tokenizer_class": "PreTrainedTokenizerFast"}
    write("llama2_style", tokenizer, config)


def main():
    text = training_text()
    llama3_style(text)
    llama2_style(text)


if __name__ == "__main__":
    main()
