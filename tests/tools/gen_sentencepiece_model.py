#!/usr/bin/python3
"""Trains the small SentencePiece models of tests/data/tokenizers/ on tiny
Shakespeare and writes their goldens, with Debian's python3-sentencepiece
(0.1.97-3, the same version as the libsentencepiece kiln links; install it
with `apt-get install -y python3-sentencepiece`, it is not a build or test
dependency). Run from the repository root:

    /usr/bin/python3 tests/tools/gen_sentencepiece_model.py [../shared]

Two models:
  sp_bpe_identity.model   Llama-2-like: BPE, byte_fallback, split_digits,
                          identity normalisation, whitespace kept as is.
  sp_unigram_squeeze.model  unigram, byte_fallback, SentencePiece's default
                          removal of extra whitespace (leading, trailing and
                          repeated spaces go, so decode(encode(x)) != x for
                          such x), and special ids moved (pad 0, unk 1, bos 2,
                          eos 3). Identity rather than the default nmt_nfkc
                          normalisation, whose table would make the model
                          250 KB instead of tens.
  sp_no_bos_eos.model     a small unigram model without BOS and EOS pieces
                          (bos_id = eos_id = -1): kiln refuses it for
                          Llama2Tokenizer and GPTSentencePieceTokenizer, which
                          need them; SentencePieceTokenizer falls back to its
                          own <BOS> and <EOS>, so only its goldens are written.

For each model, <model>_goldens.jsonl holds, on its first line, the
vocab_size, eod and bos that Megatron-LM's wrappers report for each
--tokenizer-type, then one line per text case with the ids of each type's
tokenize(text) and its detokenize(tokenize(text)), then a few lines that
decode chosen id sequences ("decode_ids"). The wrapper rules are written out
below from Megatron-LM's megatron/training/tokenizer/tokenizer.py
(_SentencePieceTokenizer, _GPTSentencePieceTokenizer, _Llama2Tokenizer); the
ids inside them come from the library alone.

Training is deterministic: one thread, a fixed random seed, all sentences
read in file order (no sampling or shuffling).
"""
import io
import json
import os
import sys

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "..", "data", "tokenizers")

MODELS = {
    "sp_bpe_identity": dict(
        model_type="bpe",
        vocab_size=2000,
        byte_fallback=True,
        split_digits=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        allow_whitespace_only_pieces=True,
        character_coverage=1.0,
    ),
    "sp_unigram_squeeze": dict(
        model_type="unigram",
        vocab_size=1000,
        byte_fallback=True,
        character_coverage=0.9995,
        normalization_rule_name="identity",
        remove_extra_whitespaces=True,
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
    ),
    "sp_no_bos_eos": dict(
        model_type="unigram",
        vocab_size=400,
        byte_fallback=True,
        normalization_rule_name="identity",
        bos_id=-1,
        eos_id=-1,
    ),
}

# The types each model's goldens cover (all of them unless listed).
MODEL_TYPES = {"sp_no_bos_eos": ["SentencePieceTokenizer"]}


# --- Megatron-LM's wrappers, restated -----------------------------------------

class GPTSentencePiece:
    """_GPTSentencePieceTokenizer: the library's ids, no BOS; EOD is EOS."""

    def __init__(self, sp):
        self.sp = sp

    def info(self):
        return {"vocab_size": self.sp.get_piece_size(), "eod": self.sp.eos_id(), "bos": self.sp.bos_id()}

    def tokenize(self, text):
        return self.sp.encode_as_ids(text)

    def detokenize(self, ids):
        return self.sp.decode_ids(ids)


class Llama2(GPTSentencePiece):
    """_Llama2Tokenizer: tokenize(s, bos=True, eos=False) puts BOS first."""

    def tokenize(self, text):
        return [self.sp.bos_id()] + self.sp.encode(text)


class PlainSentencePiece:
    """_SentencePieceTokenizer (vocab_extra_ids=0): special tokens <CLS>, <SEP>,
    <EOD>, <MASK> and the model's pad/bos/eos pieces (<PAD>/<BOS>/<EOS> where the
    model has none) are appended to the vocab when new, split out of the text
    at their first occurrence, and decoded surrounded by spaces; EOD is <EOD>."""

    def __init__(self, sp):
        self.sp = sp
        self.size = sp.get_piece_size()
        vocab = {sp.id_to_piece(i): i for i in range(self.size)}
        self.special = {}  # insertion order matters: first wins on a tie

        def add(token):
            if token not in vocab:
                vocab[token] = len(vocab)
            self.special[token] = vocab[token]

        for token in ("<CLS>", "<SEP>", "<EOD>", "<MASK>"):
            add(token)
        for getter, fallback in ((sp.pad_id, "<PAD>"), (sp.bos_id, "<BOS>"), (sp.eos_id, "<EOS>")):
            i = getter()
            add(sp.id_to_piece(i) if 0 <= i < self.size else fallback)
        self.vocab_size = len(vocab)
        self.inv_special = {i: t for t, i in self.special.items()}
        self.bos = self.special[sp.id_to_piece(sp.bos_id()) if sp.bos_id() >= 0 else "<BOS>"]

    def info(self):
        return {"vocab_size": self.vocab_size, "eod": self.special["<EOD>"], "bos": self.bos}

    def tokenize(self, text):
        ids = []
        idx = 0
        while True:
            found = {t: text.find(t, idx) for t in self.special}
            found = {t: at for t, at in found.items() if at >= 0}
            if not found:
                break
            token = min(found, key=found.get)
            ids += self.sp.encode_as_ids(text[idx:found[token]])
            ids.append(self.special[token])
            idx = found[token] + len(token)
        return ids + self.sp.encode_as_ids(text[idx:])

    def detokenize(self, ids):
        text = ""
        last = 0
        for i, id_ in enumerate(ids):
            if id_ in self.inv_special:
                text += self.sp.decode_ids(ids[last:i]) + " " + self.inv_special[id_] + " "
                last = i + 1
        return text + self.sp.decode_ids(ids[last:])


TYPES = {
    "GPTSentencePieceTokenizer": GPTSentencePiece,
    "Llama2Tokenizer": Llama2,
    "SentencePieceTokenizer": PlainSentencePiece,
}

# --- Cases --------------------------------------------------------------------

CASES = [
    "",
    " ",
    "  ",
    "\n",
    "\n\n\n",
    "\t",
    "hello",
    "Hello world",
    " Hello world",
    "Hello world ",
    "  leading two spaces",
    "trailing two spaces  ",
    "a  b   c    d",
    "line one\nline two\n",
    "line one\r\nline two\r\n",
    "tab\tseparated\tvalues",
    "First Citizen:\nBefore we proceed any further, hear me speak.",
    "ROMEO:\nBut, soft! what light through yonder window breaks?",
    "To be, or not to be: that is the question.",
    "Thou art more lovely and more temperate.",
    "I'll, we're, don't, can't -- what's this?",
    "1234567890",
    "3.14159 and 2,718 and -42",
    "The year 1599, act 3 scene 2.",
    "0x1F 0b1010 1e-9",
    "CamelCaseWordsAndALLCAPS",
    "punctuation!!! ??? ... ;;; :::",
    "(brackets) [square] {curly} <angle>",
    "email@example.com https://example.org/path?q=1&r=2",
    "a\u00a0non-breaking space",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber",
    "e\u0301 combining acute",
    "\ufb01 ligature and \u2460 circled one and \uff21 fullwidth A",
    "\u00bd \u00b2 \u2122 \u2026",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440",
    "\u0393\u03b5\u03b9\u03b1 \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u4f60\u597d\uff0c\u4e16\u754c",
    "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c",
    "\uc548\ub155\ud558\uc138\uc694 \uc138\uacc4",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
    "emoji \U0001f600\U0001f389\U0001f44d",
    "family \U0001f468\u200d\U0001f469\u200d\U0001f467 zwj",
    "flag \U0001f1eb\U0001f1f7 and skin \U0001f44b\U0001f3fd",
    "math \U0001d400\U0001d401 \u2200x\u2203y",
    "\u2581 the meta symbol itself",
    "under_score and \u2581\u2581 doubled",
    "<s>",
    "</s>",
    "<unk>",
    "<pad>",
    "text <s> with bos </s> and eos",
    "<s><s></s>",
    "<CLS> and <SEP> and <EOD> and <MASK>",
    "a<EOD>b<EOD>",
    "<EOD>",
    "<PAD><BOS><EOS>",
    "<0x41> byte piece text",
    "\x00 nul and \x01 control \x7f del",
    "zero\u200bwidth\u200cjoiners\u200d",
    "\ufeffbom at start",
    "mixed \u4e2d\u6587 and English \U0001f600 1 2 3",
    "   \n  \n  ",
    "end with newline\n",
    "x" * 300,
    "The quick brown fox jumps over the lazy dog. " * 4,
]

DECODE_CASES = "decode_ids"


def decode_cases(sp):
    """Id sequences worth decoding on their own: byte pieces that do or do
    not form UTF-8, the control and unknown pieces, pieces mid-sequence."""
    byte = lambda b: sp.piece_to_id("<0x%02X>" % b)
    hello = sp.encode_as_ids("Hello")
    if sp.bos_id() < 0:
        return [hello, [byte(0xE4), byte(0xBD)] + hello, hello + [sp.unk_id()]]
    return [
        [],
        [byte(0xE4), byte(0xBD), byte(0xA0)],
        [byte(0xE4), byte(0xBD)],
        [byte(0xFF)],
        hello + [byte(0x80)] + hello,
        [sp.bos_id()] + hello + [sp.eos_id()],
        hello + [sp.unk_id()] + hello,
        [sp.unk_id()],
        hello + [sp.bos_id()] + hello,
        list(range(0, min(40, sp.get_piece_size()))),
    ]


def train(corpus, options):
    """The model's bytes. Sentences come from an iterator and the model goes
    to a writer so that no path of this machine is recorded in it."""
    with open(corpus, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f]
    model = io.BytesIO()
    spm.set_random_generator_seed(1234)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=model,
        num_threads=1,
        input_sentence_size=0,
        shuffle_input_sentence=False,
        minloglevel=2,
        **options,
    )
    return model.getvalue()


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "shared")
    corpus = os.path.join(shared, "data", "corpus", "tinyshakespeare.txt")
    if not os.path.exists(corpus):
        sys.exit("needs " + corpus)
    assert spm.__version__ == "0.1.97", "regenerate with python3-sentencepiece 0.1.97 (Debian 12)"
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, options in MODELS.items():
        model_path = os.path.join(OUT_DIR, name + ".model")
        with open(model_path, "wb") as f:
            f.write(train(corpus, options))
        sp = spm.SentencePieceProcessor(model_file=model_path)
        wrappers = {t: cls(sp) for t, cls in TYPES.items() if t in MODEL_TYPES.get(name, TYPES)}
        lines = [{"model": name + ".model", "library": "sentencepiece " + spm.__version__,
                  "types": {t: w.info() for t, w in wrappers.items()}}]
        for text in CASES:
            ids = {t: w.tokenize(text) for t, w in wrappers.items()}
            decoded = {t: wrappers[t].detokenize(ids[t]) for t in wrappers}
            lines.append({"text": text, "ids": ids, "decoded": decoded})
        for ids in decode_cases(sp):
            lines.append({DECODE_CASES: ids, "text": sp.decode_ids(ids)})
        with open(os.path.join(OUT_DIR, name + "_goldens.jsonl"), "w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
        print(name, os.path.getsize(model_path), "bytes,", len(CASES), "cases")


if __name__ == "__main__":
    main()
