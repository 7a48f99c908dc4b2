// Golden ids for kiln's HuggingFaceTokenizer from an independent
// implementation: Hugging Face's pure-JavaScript tokenizers.js, npm package
// @huggingface/tokenizers 0.2.0. For each committed test tokenizer
// (tests/data/tokenizers/<name>/tokenizer.json + tokenizer_config.json) it
// writes tests/data/tokenizers/<name>_goldens.jsonl, one JSON object a line:
//   {"text": ..., "ids": encode(text) with special tokens, "decoded": decode(ids)}
// Run from the repository root (nothing is downloaded at test time):
//   npm install --prefix /tmp/hfjs @huggingface/tokenizers@0.2.0
//   NODE_PATH=/tmp/hfjs/node_modules node tests/tools/gen_hf_tokenizer_goldens.mjs
//
// Cases left out on purpose: U+0085 (NEL) and U+FEFF (BOM) next to words.
// JavaScript's \s (used by tokenizers.js for the Split regex) includes
// U+FEFF and not U+0085; Oniguruma's (Hugging Face's Rust tokenizers, whose
// ids Megatron gets) is Unicode White_Space: U+0085 and not U+FEFF. The two
// implementations differ there, so neither is a golden for the other.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || "/tmp/hfjs/node_modules", "x.js"));
const { Tokenizer } = require("@huggingface/tokenizers");

const CASES = [
  "",
  "Hello world",
  "hello World!",
  " leading space",
  "trailing space ",
  "  two leading spaces",
  "The quick brown fox jumps over the lazy dog.",
  "It's, you're, we've, I'm, they'll, she'd, don't",
  "IT'S, YOU'RE, WE'VE, I'M, THEY'LL, SHE'D, DON'T",
  "It'S mixed 'Re 'vE 'lL",
  "1",
  "12",
  "123",
  "1234",
  "12345678901234567890",
  "3.14159 and 2,718,281 and 1e-10",
  "Call 555-0123 at 10:30pm on 2024-01-15.",
  "tabs\tand\ttabs",
  "line one\nline two\n\nline four",
  "windows\r\nline endings\r\n",
  "spaces     between     words",
  "   \n   \n   ",
  "trailing newlines\n\n\n",
  "mixed \t \n whitespace \n\t end",
  "Le café était très bon, à côté de l'hôtel.",
  "Über die Brücke gehen Mädchen und Jungen.",
  "El niño comió piñata. ¿Qué? ¡Sí!",
  "Ελληνικά γράμματα και λέξεις.",
  "Съешь же ещё этих мягких французских булок.",
  "日本語のテキストです。東京は大きい都市です。",
  "中文文本，你好世界！",
  "한국어 문장입니다.",
  "Emoji: 😀 😃 🎉 👍🏽 ❤️ 🚀✨",
  "family: 👨‍👩‍👧‍👦 flag: 🇫🇷",
  "symbols ©®™ → ← ∑ ∞ ≈ ≠ ± × ÷",
  "e\u0301 (e + combining acute) and \u00e9 (precomposed)",
  "a\u0308o\u0308u\u0308 combining diaeresis",
  "Vie\u0323\u0302t Nam, \u1100\u1161\u11a8 jamo, \u212b sign, \u0958 excluded",
  "Zalgo: Z\u0351\u036b\u0343a\u0300\u0301l\u0315g\u0359o\u0328",
  "<|begin_of_text|>Hello<|end_of_text|>",
  "text <|eot_id|> more text",
  "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
  "no special <|not_a_token|> here",
  "before   <|mask|>   after",
  "x<|mask|>y",
  "<s>hello</s> <unk>",
  "def main(argv):\n    return sum(x * 2 for x in range(10))",
  "if (a && b) { return c->d[0]; } // comment",
  "https://example.com/path?query=1&b=2#frag",
  "user@example.com, @mention #hashtag $100 50% off",
  "\"quoted\" 'single' `back` (paren) [bracket] {brace}",
  "...!!!???---___***",
  "ALL CAPS SENTENCE WITH NUMBERS 42",
  "camelCaseWord snake_case_word kebab-case-word",
  "Ünïcödé mïxéd wïth ASCII",
  "Tiếng Việt có dấu",
  "مرحبا بالعالم",
  "שלום עולם",
  "हिन्दी पाठ",
  "ᚠᚢᚦᚨᚱᚲ runes and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters",
  "a",
  " ",
  "\n",
  "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.",
];

// out: the goldens' name; edit: a change to the tokenizer.json before use
// (llama3_style_nfc and llama2_style_metaspace; the C++ tests make the same edits).
function run(name, out = name, edit = (j) => j) {
  const dir = path.join("tests", "data", "tokenizers", name);
  const json = edit(JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")));
  const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const tok = new Tokenizer(json, config);
  const lines = [];
  for (const text of CASES) {
    const ids = tok.encode(text).ids;
    const decoded = tok.decode(ids, { skip_special_tokens: false });
    lines.push(JSON.stringify({ text, ids, decoded }));
  }
  fs.writeFileSync(path.join("tests", "data", "tokenizers", `${out}_goldens.jsonl`), lines.join("\n") + "\n");
  console.log(`${out}: ${lines.length} cases`);
}

run("llama3_style");
run("llama2_style");
run("llama3_style", "llama3_style_nfc", (j) => ({ ...j, normalizer: { type: "NFC" } }));
// The Llama-2-style file in the newer (legacy: false) layout: a Metaspace
// pre-tokenizer instead of the Prepend/Replace normalizers, and a Metaspace
// decoder. tokenizers.js's Metaspace does not split, so split is false.
const metaspace = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false };
run("llama2_style", "llama2_style_metaspace", (j) => ({
  ...j,
  normalizer: null,
  pre_tokenizer: metaspace,
  decoder: { type: "Sequence", decoders: [{ type: "ByteFallback" }, metaspace, { type: "Fuse" }] },
}));
