#!/usr/bin/env node
// Writes peer_gpt4o.json: llama.cpp's token ids (the peer: node-llama-cpp 3.21.1's prebuilt
// llama.cpp, see ../shared/peer/README.md) for the o200k pre-tokenizer ("gpt-4o", gpt-oss), on
// the two vocabularies test_tokenizer's Gpt4oPeer.DumpForPeer writes (see gpt4o_test.cpp):
//   qwen2_gpt4o.gguf      ../shared/vocab/ggml-vocab-qwen2.gguf with only tokenizer.ggml.pre
//                         rewritten to "gpt-4o" (ids);
//   qwen2_gpt4o_ext.gguf  the same plus gpt-oss's seven harmony tokens (control type, as in
//                         gpt-oss GGUF files) and merges across the word boundaries that set o200k
//                         apart, ahead of Qwen2's (ids_ext, and the harmony cases).
// Run through regen_peer_gpt4o.sh beside this file:
//   node regen_peer_gpt4o.mjs DUMP_DIR SHARED_DIR OUT.json   (peer folder: $LLAMACPP_PEER_DIR or
//   ~/.cache/llamacpp-peer, as installed by ../shared/peer/install.sh)
//
// Each case: {text | bytes_hex + peer_text, special, ids}; ids = llama_tokenize(text,
// add_special=false, parse_special=special). Invalid UTF-8 cannot reach llama.cpp through a
// JavaScript string, so a bytes_hex case carries peer_text, the text llama.cpp's decoder makes of
// those bytes (see tools/gen_tokenizer_peer_data.mjs), and ids are the peer's ids for it.
import fs from "node:fs";
import path from "node:path";

import {llamaDecode, loadPeer, rng} from "../../../tools/peer_tokenizer_common.mjs";

const [dumpDir, shared, outPath] = process.argv.slice(2).map((p) => path.resolve(p));
if (!outPath) throw new Error("usage: regen_peer_gpt4o.mjs DUMP_DIR SHARED_DIR OUT.json");
const {module: {getLlama, LlamaLogLevel}, version: peerVersion} = await loadPeer();

const rand = rng(20270117);
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const cp = (lo, hi) => String.fromCodePoint(int(lo, hi));

// Contractions: every upper/lower spelling of 's 't 're 've 'm 'll 'd, after lower, upper,
// non-ASCII and digit stems, alone, and followed by more letters.
const spellings = [];
for (const c of ["s", "t", "re", "ve", "m", "ll", "d"]) {
  for (let mask = 0; mask < 1 << c.length; mask++) {
    spellings.push([...c].map((ch, i) => (mask >> i) & 1 ? ch.toUpperCase() : ch).join(""));
  }
}
const contractions = [];
for (const s of spellings) {
  contractions.push(`he'${s}`, `HELLO'${s}`, `ÉCOLE'${s} x`, `1990'${s}`, ` '${s}`, `it'${s}abc and we'${s}.`);
}
contractions.push(
  "HELLO'S", "hello's", "Hello'S", "HeLLo'S world", "I'M SURE WE'LL SEE THEY'VE DONE IT'S", "i'm", "I'm",
  "don't DON'T Don'T dON't", "you'RE YOU're", "o'clock", "rock'n'roll", "''s", "'''", "'s's's", "x'll've'd",
  "'Twas 'tis", "it’s (curly)", "café's CAFÉ'S", "Straße's STRASSE'S", "naïve'LL", "ΑΘΗΝΑ'S", "中文's", "word 's",
  "word\t's", "word\n's", "HELLO'Sworld", "helloWORLD'S", "McDonald's", "O'Neil's", "e\u0301's", "ß'RE",
);

const casing = [
  "HelloWorld", "helloWorld", "HELLOworld", "HTTPServer", "iPhone", "McDonald", "ABCdefGHI", "aBcDeF",
  "XMLHttpRequest", "getHTTPResponseCode", "snake_case_Name", "SCREAMING_SNAKE", "camelCase123Next",
  "ÀÉÎÕÜ", "àéîõü", "ÉCOLE", "École", "éCOLE", "straße", "STRASSE", "ǅemal ǈubljana", "ΑθήναΑΘΗΝΑ",
  "МоскваMOSCOW", "moscowМОСКВА", "ʰello ʰELLO", "AÀB", "aÀb", "ÀaB", "AbÀ", "ÄPFELäpfel", "äPFEL",
  "ǄǅǆABC", "ⅰⅱⅲ Ⅻ", "ＡＢＣａｂｃ", "ﬁne ﬂow", "İstanbul ıi", "ΣΊΣΥΦΟΣ σίσυφος", "Ǆ", "ABC DEF", " a B c ",
];

const marks = [
  "e\u0301", "E\u0301COLE", "cafe\u0301", "n\u0303", "a\u0308\u0304", "e\u0301\u0301", "\u0301abc", " \u0301",
  "x\u0301y", "X\u0301Y", "ab\u0301CD", "\u20DDA", "1\u20E3", "#\u20E3", "a\u200Db", "a\u200Cb",
  "नमस्ते दुनिया", "हिन्दी", "สวัสดีครับ", "বাংলা", "తెలుగు", "தமிழ்", "ಕನ್ನಡ", "മലയാളം", "ગુજરાતી",
  "مَرْحَبًا بِالْعَالَمِ", "שָׁלוֹם", "Tiê\u0301ng Viê\u0323t", "Tiếng Việt", "ṩ̃", "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇",
  "x\uFE0F", "❤️", "a\u0345", "\u0903a", "ka\u094D\u200Dsha",
];

const digits = [
  "1", "12", "123", "1234", "12345", "123456", "1234567", "12345678901234567890", "3.14159", "1,000,000",
  "v1.2.3", "abc123def", "ABC1234DEF", "١٢٣٤٥", "１２３４", "½¼¾", "²³¹", "Ⅻ", "1st 2nd 3rd", "0x1F600",
  "-42", "+1e-10", "1 2 3", " 1234", "\t12345", "2026-01-17T12:34:56Z", "$1234.56", "12%", "(555) 123-4567",
  "৩৪৫৬", "一二三四", "1\u00A0000", "007", "9999999999",
];

const space = [
  "", " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", "\r", " \n", "\n ", "  \n  ", "a  b",
  "a   b", "a \tb", "a\t b", "trailing   ", "trailing\n", "trailing \n ", "\u00A0", "a\u00A0b", "a\u3000b",
  "\u2028", "a\u2028b", "\u0085", "a\u0085b", "\u000B\u000C", "x \u00A0 y", "    hello", "hello    ",
  "a  !", "a  \n!", "a.../\nb", "http://x.com/a/b?c=1", "path/to/file", "//comment", "*/\n", "!!/\r\n",
  "line1\r\nline2\r\n", "CRLF \r\n  indented\r\n", " \r\n \r\n ", "\n\n\n\nx", "x\n\n\n\n", " ".repeat(17) + "x",
  "\t".repeat(9) + "y", "a" + " ".repeat(64) + "b", "end. \n", "\u3000中\u3000", "; \n\t", "?\n\n", "/\n/\n",
];

const code = [
  "def f(x):\n    return x**2  # comment\n\nprint(f(10))\n",
  "int main(int argc, char** argv) {\r\n  std::cout << \"hi\" << std::endl;\r\n  return 0;\r\n}\r\n",
  "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
  "<div class=\"x\">Hello &amp; <b>world</b></div>\n",
  "for i in $(seq 1 10); do echo \"$i\"; done | sort -n > /tmp/out.txt",
  "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
  "const re = /^[a-z]+\\d{2,}$/gi; // regex\nlet x = a?.b ?? 'c';",
  "# Title\n\n- item one\n- item **two**\n\n```js\nconsole.log(1)\n```\n",
  "C:\\Users\\me\\Documents\\file.txt\r\n",
  "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
  "x += y /= z; a->b; c::d; e<<=2; f>>>=3; !==; ===",
  "    if (a && b || !c) {\n\t\treturn -1;\n    }\n",
  "\"\"\"docstring\"\"\"\n'''x'''",
  "https://example.com/path/to/page.html?query=value&other=123#anchor",
  "user@example.com, admin@test.org",
];

const scripts = [
  "Hello world", " Hello world", "Hello, world! How's it going? I'd say it's fine.",
  "你好，世界！", "我们今天去公园散步。", "中文和English混合的句子，还有数字123和emoji😀。", "こんにちは世界", "カタカナとひらがな",
  "안녕하세요 세계", "Привет, мир!", "Καλημέρα κόσμε", "مرحبا بالعالم", "שלום עולם", "Γειά σου Κόσμε ΑΒΓ",
  "ⲁⲃⲅ", "ქართული", "Հայերեն", "ᏣᎳᎩ", "ኢትዮጵያ", "ꦗꦮ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝐁𝐨𝐥𝐝", "∑∫√∞ ≤≥≠", "→←↑↓",
  "«quoted» “double” ‘single’", "—dash–en", "…", "¿Qué? ¡Sí!", "Ελληνικά και English mixed",
];

const emoji = [
  "👨‍👩‍👧‍👦", "🇯🇵🇺🇸", "👍🏽", "🦙", "😶‍🌫️", "🚀✅", "🤖🤖🤖", "I ❤️ NY", "emoji😀in😀text", "😀 😀  😀",
  "🏳️‍🌈", "👩🏾‍💻", "✌️✌🏻", "©®™", "🔟#️⃣",
];

// Seeded random texts: pieces drawn from the pools and from code point ranges, joined with
// or without a space.
const pools = [contractions, casing, marks, digits, space, scripts, emoji];
function randomPiece() {
  const r = rand();
  const n = () => int(1, 8);
  if (r < 0.06) return " ".repeat(int(2, 30));
  if (r < 0.09) return "\n".repeat(int(1, 4)) + " ".repeat(int(0, 4)) + (rand() < 0.5 ? "\t" : "");
  if (r < 0.14) return Array.from({length: int(1, 12)}, () => int(0, 9)).join("");
  if (r < 0.18) return Array.from({length: n()}, () => cp(0x4E00, 0x9FFF)).join("");
  if (r < 0.21) return Array.from({length: n()}, () => cp(0x1F300, 0x1F64F)).join("");
  if (r < 0.25) return Array.from({length: n()}, () => cp(0x0400, 0x04FF)).join("");
  if (r < 0.29) return Array.from({length: n()}, () => cp(0x00C0, 0x024F)).join("");   // Latin-1/Extended
  if (r < 0.33) return Array.from({length: n()}, () => cp(0x0391, 0x03C9)).join("");   // Greek
  if (r < 0.37) return Array.from({length: n()}, () => (rand() < 0.5 ? cp(0x61, 0x7A) : cp(0x41, 0x5A))).join("");
  if (r < 0.41) return cp(0x61, 0x7A) + Array.from({length: int(1, 3)}, () => cp(0x0300, 0x036F)).join("");
  if (r < 0.45) return Array.from({length: n()}, () => cp(0x21, 0x2F)).join("");       // ASCII punctuation
  if (r < 0.49) return "'" + pick(spellings);
  if (r < 0.52) return pick(["\u00A0", "\u3000", "\u0085", "\u2028", "\u2003", "\r\n", "\t", "\u000B"]);
  if (r < 0.55) return Array.from({length: n()}, () => cp(0xAC00, 0xD7A3)).join("");   // Hangul
  return pick(pick(pools));
}
const randomText = () => Array.from({length: int(1, 10)}, () => (rand() < 0.5 ? " " : "") + randomPiece()).join("");
const random = Array.from({length: 120}, randomText);

// llama.cpp's own test strings (../shared/vocab/ggml-vocab-qwen2.gguf.inp).
const vectors = fs.readFileSync(path.join(shared, "vocab/ggml-vocab-qwen2.gguf.inp"), "utf8")
  .split("\n__ggml_vocab_test__\n").slice(0, -1);  // as tests/tokenizer/vectors_test.cpp reads them

const invalid = ["80", "c3", "616263e4b8646566", "f09f9878", "c0af", "48454c4c4f80e280995320776f726c64"];

const harmonyTokens = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>", "<|constrain|>"];
const harmonyTexts = [
  "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n" +
    "Current date: 2025-08-05\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be " +
    "included for every message.<|end|><|start|>user<|message|>What's the weather in Tokyo?<|end|><|start|>assistant",
  "<|start|>assistant<|channel|>analysis<|message|>User asks weather; call tool.<|end|><|start|>assistant" +
    "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"Tokyo\"}<|call|>",
  "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"temp_c\":21}<|end|>",
  "<|start|>assistant<|channel|>final<|message|>It's 21°C in Tokyo.<|return|>",
  "<|end|><|start|><|channel|><|message|><|return|><|call|><|constrain|>",
  "text<|end|>more <|start|> spaced <|message|>\n", "<|start|<|start|>|>", "<|star t|> <|START|> <|end|",
  "<|channel|>final<|message|>HELLO'S 1234567", "<|endoftext|><|start|>user", "<|im_start|>user\nhi<|im_end|><|return|>",
  "<|call|>", "<|return|>", "plain text without markers",
];

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const load = (name) => llama.loadModel({modelPath: path.join(dumpDir, name), gpuLayers: 0, vocabOnly: true});

const tok = (m, text, special) => Array.from(m.tokenize(text, special));
const cases = [];
const groups = {contractions, casing, marks, digits, space, code, scripts, emoji, vectors, random};
for (const [group, texts] of Object.entries(groups)) {
  for (const text of texts) cases.push({group, text, special: false});
}
for (const hex of invalid) cases.push({group: "invalid", bytes_hex: hex, peer_text: llamaDecode(hex), special: false});
for (const [file, field] of [["qwen2_gpt4o.gguf", "ids"], ["qwen2_gpt4o_ext.gguf", "ids_ext"]]) {
  const m = await load(file);
  for (const c of cases) c[field] = tok(m, c.peer_text ?? c.text, c.special);
  await m.dispose();
}

const hm = await load("qwen2_gpt4o_ext.gguf");
const harmony = {
  tokens: harmonyTokens.map((t) => {
    const ids = tok(hm, t, true);
    if (ids.length !== 1) throw new Error(`${t} is not one token`);
    // eog: llama_vocab_is_eog itself (node-llama-cpp's isEogToken also counts the EOT id, which
    // llama.cpp picks from a hash map here: <|end|> or <|im_end|>). plain_piece: the token
    // rendered without special tokens (llama.cpp renders user-defined tokens, drops control ones).
    return {text: t, id: ids[0], eog: hm._model.isEogToken(ids[0]), plain_piece: hm.detokenize(ids, false)};
  }),
  eos: hm.tokens.eos ?? -1,
  cases: harmonyTexts.flatMap((text) => [true, false].map((sp) => ({text, special: sp, ids: tok(hm, text, sp)}))),
};
await hm.dispose();

const data = {
  generated_by: "tests/tokenizer/data/regen_peer_gpt4o.sh",
  peer: `node-llama-cpp ${peerVersion} (prebuilt llama.cpp)`,
  model: "vocab/ggml-vocab-qwen2.gguf",
  pre: "gpt-4o",
  cases,
  harmony,
};
fs.writeFileSync(outPath, JSON.stringify(data, null, 0) + "\n");
process.stderr.write(`${cases.length} cases, ${harmony.cases.length} harmony cases\n`);
process.exit(0);
