#!/usr/bin/env node
// Writes peer_qwen35.json: llama.cpp's token ids (the peer: node-llama-cpp's prebuilt llama.cpp,
// see ../shared/peer/README.md) for the Qwen3.5 pre-tokenizer ("qwen35"), on qwen2_qwen35.gguf
// (../shared/vocab/ggml-vocab-qwen2.gguf with only tokenizer.ggml.pre rewritten to "qwen35",
// written by test_tokenizer's Qwen35Peer.DumpForPeer): `ids`; and on the unchanged Qwen2 file:
// `ids_qwen2`, so the test can show which texts the two pre-tokenizers tell apart.
// Run through regen_peer_qwen35.sh beside this file:
//   node regen_peer_qwen35.mjs DUMP_DIR SHARED_DIR OUT.json
// Each case: {group, text, ids, ids_qwen2}; ids = llama_tokenize(text, add_special=false,
// parse_special=false).
import fs from "node:fs";
import path from "node:path";

import {loadPeer, rng} from "../../../tools/peer_tokenizer_common.mjs";

const [dumpDir, shared, outPath] = process.argv.slice(2).map((p) => path.resolve(p));
if (!outPath) throw new Error("usage: regen_peer_qwen35.mjs DUMP_DIR SHARED_DIR OUT.json");
const {module: {getLlama, LlamaLogLevel}, version: peerVersion} = await loadPeer();

// Combining marks (Mn, Mc, Me) in and around words, punctuation and digits.
const marks = [
  "e\u0301", "cafe\u0301", "E\u0301COLE", "n\u0303o", "a\u0308\u0304", "e\u0301\u0301", "ab\u0301cd", "\u0301abc",
  " \u0301", "\u0301", "x \u0301y", "!\u0301", "!!\u0301?", "a.\u0301b", "1\u0301", "1\u20E3", "#\u20E3", "\u20DDA",
  "x\uFE0F", "a\u0345", "\u0903a", "e\u0301's", "cafe\u0301 au lait, s'il vous plai\u0302t!", "(e\u0301)",
  "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇", "ṩ̃", "a\u0301\r\nb\u0301", "\u0301\u0301\u0301", "x\u0300-\u0300y", "\t\u0301",
];
const scripts = [
  "नमस्ते", "नमस्ते दुनिया", "हिन्दी भाषा", "क्षत्रिय", "ka\u094D\u200Dsha", "স্বাগতম বাংলা", "తెలుగు", "தமிழ்நாடு",
  "ಕನ್ನಡ", "മലയാളം", "ગુજરાતી", "ਪੰਜਾਬੀ", "සිංහල", "ພາສາລາວ", "မြန်မာ", "ភាសាខ្មែរ", "བོད་ཡིག",
  "สวัสดีครับ", "ภาษาไทย ๑๒๓", "น้ำ", "กรุงเทพมหานคร",
  "Tiê\u0301ng Viê\u0323t", "Tiếng Việt", "Xin cha\u0300o, thê\u0301 giơ\u0301i!", "Hà Nội 2024",
  "مَرْحَبًا بِالْعَالَمِ", "שָׁלוֹם עֲלֵיכֶם", "한국어", "中文测试", "Ελληνικά ά", "Привет, мир!",
];
const mixed = [
  "नमस्ते123!", "e\u0301=mc²", "v1.2\u0301", "2\u0301024", "“quoted” é\u0301", "<a href='x'>e\u0301</a>",
  "def f\u0301(x): return x+1", "¿Qué\u0301?", "ĉu ŝi?", "a\u0301\u0301\u0301b 12 !!", "  \u0301  ",
  "price: ₹१२३४", "①②③ ⓐ", "...\u0301...", "hello world", "I'm HERE'S don't",
];
const rand = rng(20270301);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pools = [[0x61, 0x7A], [0x300, 0x36F], [0x900, 0x97F], [0xE00, 0xE7F], [0x20, 0x2F], [0x30, 0x39],
  [0x1AB0, 0x1AFF], [0x20D0, 0x20FF], [0xFE20, 0xFE2F], [0x4E00, 0x4E20]];
const randomText = () => Array.from({length: int(1, 12)}, () => {
  const [lo, hi] = pools[int(0, pools.length - 1)];
  return (rand() < 0.3 ? " " : "") + Array.from({length: int(1, 4)}, () => String.fromCodePoint(int(lo, hi))).join("");
}).join("");
const random = Array.from({length: 40}, randomText);

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const load = (p) => llama.loadModel({modelPath: p, gpuLayers: 0, vocabOnly: true});
const tok = (m, text) => Array.from(m.tokenize(text, false));
const cases = [];
for (const [group, texts] of Object.entries({marks, scripts, mixed, random})) {
  for (const text of texts) cases.push({group, text});
}
for (const [file, field] of [[path.join(dumpDir, "qwen2_qwen35.gguf"), "ids"],
                             [path.join(shared, "vocab/ggml-vocab-qwen2.gguf"), "ids_qwen2"]]) {
  const m = await load(file);
  for (const c of cases) c[field] = tok(m, c.text);
  await m.dispose();
}
const data = {
  generated_by: "tests/tokenizer/data/regen_peer_qwen35.sh",
  peer: `node-llama-cpp ${peerVersion} (prebuilt llama.cpp)`,
  model: "vocab/ggml-vocab-qwen2.gguf",
  pre: "qwen35",
  cases,
};
fs.writeFileSync(outPath, JSON.stringify(data, null, 0) + "\n");
const differ = cases.filter((c) => JSON.stringify(c.ids) !== JSON.stringify(c.ids_qwen2)).length;
process.stderr.write(`${cases.length} cases, ${differ} tokenize differently under qwen2\n`);
process.exit(0);
