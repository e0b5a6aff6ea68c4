#!/usr/bin/env node
// Regenerates tests/tokenizer/data/peer_*.json: token ids produced by llama.cpp (the peer:
// node-llama-cpp 3.21.1's prebuilt llama.cpp, see ../shared/peer/README.md) for a fixed,
// seeded set of texts, so CI can compare ridge's tokenizer with llama.cpp without the peer.
//
//   RIDGE_TOKENIZER_DUMP_DIR=/tmp/tok build/tests/test_tokenizer --gtest_filter=BuiltinVocab.DumpForPeer
//   node tools/gen_tokenizer_peer_data.mjs [SHARED_DIR] [OUT_DIR] [DUMP_DIR]
//   (defaults: ../shared, tests/tokenizer/data, /tmp/tok; peer folder: $LLAMACPP_PEER_DIR or
//    ~/.cache/llamacpp-peer, as installed by ../shared/peer/install.sh). The first command writes
//   the built-in byte tokenizer (src/tokenizer/gguf_vocab.h) as builtin_{chatml,llama3}.gguf.
//
// Each case: {text | bytes_hex, special, ids}. `ids` is llama_tokenize(text, add_special=false,
// parse_special=special). Invalid UTF-8 cannot be passed to llama.cpp through JavaScript
// strings, so a bytes_hex case carries `peer_text`: the same bytes as llama.cpp's BPE path
// decodes them (each byte that does not start a complete sequence becomes U+FFFD, overlong forms
// decode to their code point); `ids` are the peer's ids for peer_text.
import fs from "node:fs";
import path from "node:path";

import {llamaDecode, loadPeer, rng} from "./peer_tokenizer_common.mjs";

const shared = path.resolve(process.argv[2] ?? "../shared");
const outDir = path.resolve(process.argv[3] ?? "tests/tokenizer/data");
const dumpDir = path.resolve(process.argv[4] ?? "/tmp/tok");
const {module: {getLlama, LlamaLogLevel}, version: peerVersion} = await loadPeer();

const rand = rng(20261202);
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const cp = (lo, hi) => String.fromCodePoint(int(lo, hi));

const pools = {
  english: ["Hello", "world", "the", "don't", "I'LL", "it's", "we've", "They'RE", "o'clock", "3.14159",
    "1234567", "foo_bar", "x+y=z", "<html>", "C++", "e-mail", "U.S.A.", "naïve", "café", "Äpfel"],
  chinese: ["你好，世界！", "我们今天去公园散步。", "机器学习", "北京欢迎你", "　中文全角空格　"],
  other: ["Привет мир", "Καλημέρα κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีครับ",
    "こんにちは世界", "カタカナ", "안녕하세요", "កាន់តែពិសេស", "Ελληνικά", "Tiếng Việt", "e\u0301\u0301", "a\u0308\u0304"],
  emoji: ["👨‍👩‍👧‍👦", "🇯🇵🇺🇸", "👍🏽", "❤️", "🦙", "😶‍🌫️", "🚀✅", "🤖🤖🤖"],
  space: [" ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n \n", "\u00A0", "\u3000", "\u2028", "\t \t", "\u0085"],
  digits: ["0", "42", "2026", "٣٤٥", "１２３", "Ⅻ", "½"],
  punct: ["!!!", "...", "?!", "—", "“quoted”", "«»", "(((", "$$$", "#@%", "∑∫√", "→", "'", "'s", "'ll"],
};
function randomPiece() {
  const r = rand();
  if (r < 0.06) return " ".repeat(int(2, 40));
  if (r < 0.09) return "\n".repeat(int(2, 6)) + " ".repeat(int(0, 5));
  if (r < 0.14) return Array.from({length: int(1, 20)}, () => int(0, 9)).join("");
  if (r < 0.20) return Array.from({length: int(1, 8)}, () => cp(0x4E00, 0x9FFF)).join("");
  if (r < 0.25) return Array.from({length: int(1, 4)}, () => cp(0x1F300, 0x1F64F)).join("");
  if (r < 0.28) return Array.from({length: int(1, 6)}, () => cp(0x0400, 0x04FF)).join("");
  if (r < 0.30) return Array.from({length: int(1, 6)}, () => cp(0x0E00, 0x0E5B)).join("");
  return pick(pools[pick(Object.keys(pools))]);
}
const randomText = () => Array.from({length: int(1, 12)}, () => {
  const p = randomPiece();
  return rand() < 0.5 ? " " + p : p;
}).join("");

const fixed = [
  "", " ", "  ", "\n", "Hello world", " Hello world", "Hello, world! How's it going? I'd say it's fine.",
  "   leading and trailing   ", "tabs\tand\nnewlines\r\nmixed \t\n", " ".repeat(100) + "x",
  "\n".repeat(50), "a" + " ".repeat(300) + "b" + "\t".repeat(20),
  "The year 1987 had 365 days; π≈3.14159265358979 and 1,000,000 > 999,999.",
  "中文和English混合的句子，还有数字123和emoji😀。",
  "def f(x):\n    return x**2  # comment\n\nprint(f(10))\n",
  "<|im_start|>user\nhi<|im_end|>", "<|endoftext|>", "<s>[INST] hi [/INST]",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
  "I'M SURE WE'LL SEE THEY'VE DONE IT'S", "Once upon a time, there was a little girl named Lily.",
];
const specialTexts = [
  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
  "<|endoftext|>Hello<|endoftext|>", "<s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nhi [/INST]", "</s><s>", "<unk>",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  "text <|im_end|> more <|im_start|>", "<|fim_prefix|>def<|fim_suffix|>x<|fim_middle|>",
];
// Invalid UTF-8 byte strings (hex), with the text llama.cpp's decoder makes of them.
const invalid = [
  "80", "c3", "616263e4b8646566", "f09f9878", "fffe", "c0af", "e4b8ade6", "41c2", "e28241",
  "f0908080", "68656c6c6f80776f726c64", "e4bda0e5a5bd80e4b896e7958c",
];

const models = [
  ["qwen2", "vocab/ggml-vocab-qwen2.gguf"], ["llama_bpe", "vocab/ggml-vocab-llama-bpe.gguf"],
  ["gpt2", "vocab/ggml-vocab-gpt-2.gguf"], ["llama_spm", "vocab/ggml-vocab-llama-spm.gguf"],
  ["stories260k", "models/stories260K/stories260K.gguf"],
  ["builtin_chatml", "builtin:chatml"], ["builtin_llama3", "builtin:llama3"],
];
const randomTexts = Array.from({length: 60}, randomText);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
fs.mkdirSync(outDir, {recursive: true});
for (const [name, rel] of models) {
  const file = rel.startsWith("builtin:") ? path.join(dumpDir, `builtin_${rel.slice(8)}.gguf`) : path.join(shared, rel);
  const model = await llama.loadModel({modelPath: file, gpuLayers: 0, vocabOnly: true});
  const tok = (text, special) => Array.from(model.tokenize(text, special));
  const cases = [];
  for (const text of [...fixed, ...randomTexts]) cases.push({text, special: false, ids: tok(text, false)});
  for (const text of specialTexts) cases.push({text, special: true, ids: tok(text, true)});
  const isSpm = name.includes("spm") || name.includes("stories");
  if (!isSpm) {  // SPM falls back to raw bytes, which cannot reach llama.cpp from JavaScript
    for (const hex of invalid) {
      const peer_text = llamaDecode(hex);
      cases.push({bytes_hex: hex, peer_text, special: false, ids: tok(peer_text, false)});
    }
  }
  const t = model.tokens;
  const eogProbe = ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>", "<|im_start|>"];
  const eog = [t.bos, t.eos, t.eot, ...eogProbe.map((s) => tok(s, true)).filter((x) => x.length === 1).map((x) => x[0])]
    .filter((x) => x != null);
  const data = {
    generated_by: "tools/gen_tokenizer_peer_data.mjs",
    peer: `node-llama-cpp ${peerVersion} (prebuilt llama.cpp)`,
    model: rel,
    bos: t.bos ?? -1, eos: t.eos ?? -1, add_bos: Boolean(t.shouldPrependBosToken),
    eog: [...new Set(eog)].map((id) => [id, model.isEogToken(id)]),
    cases,
  };
  fs.writeFileSync(path.join(outDir, `peer_${name}.json`), JSON.stringify(data, null, 0) + "\n");
  process.stderr.write(`${name}: ${cases.length} cases\n`);
  await model.dispose();
}
process.exit(0);
