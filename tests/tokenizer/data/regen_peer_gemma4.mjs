#!/usr/bin/env node
// Writes peer_gemma4.json: llama.cpp's token ids (the peer: node-llama-cpp's prebuilt llama.cpp,
// see ../shared/peer/README.md) for Gemma 4's tokenizer (tokenizer.ggml.model = "gemma4") on the
// two synthetic vocabularies test_tokenizer's Gemma4Peer.DumpForPeer writes (tests/tokenizer/
// gemma4_vocab.h):
//   gemma4_synthetic.gguf        add_bos_token = true, every <0xNN> byte token (ids, detok);
//   gemma4_synthetic_nobos.gguf  add_bos_token = false (llama.cpp forces it on for Gemma 4),
//                                tokenizer.ggml.pre = "llama-bpe" (ignored), no <0x0D> <0x7E>
//                                <0xF0> byte tokens (ids_nobos).
// Run through regen_peer_gemma4.sh beside this file:
//   node regen_peer_gemma4.mjs DUMP_DIR OUT.json   (peer folder: $LLAMACPP_PEER_DIR or
//   ~/.cache/llamacpp-peer, as installed by ../shared/peer/install.sh)
//
// Each case: {group, text | bytes_hex + peer_text, special, ids, ids_nobos, detok}; ids =
// llama_tokenize(text, add_special=false, parse_special=special); detok = llama_detokenize(ids,
// remove_special=false, unparse_special=true) on the first vocabulary (llama.cpp applies its
// clean_spaces pass there: Gemma 4 keeps the BPE default). Invalid UTF-8 cannot reach llama.cpp
// through a JavaScript string: a bytes_hex case carries peer_text, the text llama.cpp's decoder
// makes of those bytes, and its ids are the peer's ids for peer_text.
import fs from "node:fs";
import path from "node:path";

import {llamaDecode, loadPeer, rng} from "../../../tools/peer_tokenizer_common.mjs";

const [dumpDir, outPath] = process.argv.slice(2).map((p) => path.resolve(p));
if (!outPath) throw new Error("usage: regen_peer_gemma4.mjs DUMP_DIR OUT.json");
const {module: {getLlama, LlamaLogLevel}, version: peerVersion} = await loadPeer();

const rand = rng(20260412);
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const cp = (lo, hi) => String.fromCodePoint(int(lo, hi));

const space = [
  "", " ", "  ", "   ", "    ", "     ", "        ", " Hello", "Hello ", "  Hello  ", "Hello  world",
  "Hello   world", "Hello world ", " Hello world", "Hello world", "a" + " ".repeat(21) + "b", " ".repeat(9),
  "\t", "\tHello", "tab\there", " \t ", "\u00A0", "a\u00A0b", "\u3000x", "▁", "▁Hello", "▁▁ ▁", " ▁ ",
];
const newlines = [
  "\n", "\n\n", "\n\n\n", "\n\n\n\n", "\n\n\n\n\n", "\n\n\n\n\n\n\n\n", "\n\n\n\n\n\n\n\n\n", " \n", "\n ",
  " \n ", "a\nb", "Hello\n\nworld", "Hello \n world", "Hello\n\n\n\nworld\n", "\r\n", "a\r\nb", "\r\n\r\n",
  "\r", "\n\r\n", "x\n", "\n\nx", " \n\n ", "\n \n", "line one\nline two\n\n\nline three",
];
const words = [
  "the", " the", "The", "the tokenizer", "tokenizer", " tokenizer", " tokenizers", "token", " token izer",
  "Hello world", "Hello, world!", "Hello... world....", "Hell", "HelloHello", "helloworld", "thethe",
  " the the the", "is of and", " is of and", " a", "a", "ing", " ing", " thing", "turn", " return",
  "123", "1234", "123123", "12 3", "unreachable", " unreachable", "...", "....", ".....",
];
const unicode = [
  "café", " café", "cafe\u0301", "über", " über", "Über", "ß ñ ü é", "中文", " 中文", "中文中文", "日本",
  "日本語", " 日本語", "語", "😀", "😀😀", "😀😀😀", " 😀", "🚀", " 🚀 ", "👨‍👩‍👧‍👦", "ça", "ça va", " ça",
  "ç", "garçon", "qu", "quiet", " quick", "queue", "αβγ", "Привет мир", "مرحبا", "—", "a—b", "~",
  "^$`", "~~ ~", "$100", "`code`", "e\u0301", "\u0301", "\uFEFFx", "🇯🇵", "❤️",
];
const specials = [
  "<|turn>user\nHi<turn|>", "<|turn>model\n", "<bos>Hello", "<eos>", "<unk>", "<pad><mask>", "</s>",
  "a</s>b", "<|tool_response>", "<|tool_call>call<tool_call|>", "<|channel>thought<channel|>",
  "<|think|>", "<table>", " <table> ", "<br><table>", "<|turn", "<turn|", "<|tur n>", "<<|turn>>",
  "<|turn><|turn>", "text <|turn>  user\n\n<turn|> more",
];

const pool = [...space, ...words, ...unicode, ...specials];
function randomPiece() {
  const r = rand();
  if (r < 0.08) return " ".repeat(int(1, 9));
  if (r < 0.14) return "\n".repeat(int(1, 6));
  if (r < 0.18) return Array.from({length: int(1, 6)}, () => int(0, 9)).join("");
  if (r < 0.22) return Array.from({length: int(1, 4)}, () => cp(0x4E00, 0x9FFF)).join("");
  if (r < 0.25) return Array.from({length: int(1, 3)}, () => cp(0x1F300, 0x1F64F)).join("");
  if (r < 0.28) return Array.from({length: int(1, 5)}, () => cp(0x00C0, 0x00FF)).join("");
  if (r < 0.34) return Array.from({length: int(1, 8)}, () => cp(0x21, 0x7E)).join("");
  return pick(pool);
}
const randomText = () => Array.from({length: int(1, 8)}, () => (rand() < 0.5 ? " " : "") + randomPiece()).join("");
const random = Array.from({length: 60}, randomText);

const invalid = ["80", "c3", "616263e4b8646566", "f09f9878", "c0af", "48454c4c4f80e280995320776f726c64", "20ff20"];

const cases = [];
for (const [group, texts] of Object.entries({space, newlines, words, unicode, random})) {
  for (const text of texts) cases.push({group, text, special: false});
}
for (const text of specials) {
  for (const special of [true, false]) cases.push({group: "specials", text, special});
}
for (const text of random.slice(0, 20)) cases.push({group: "random", text, special: true});
for (const hex of invalid) cases.push({group: "invalid", bytes_hex: hex, peer_text: llamaDecode(hex), special: false});

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const load = (name) => llama.loadModel({modelPath: path.join(dumpDir, name), gpuLayers: 0, vocabOnly: true});
const tok = (m, text, special) => Array.from(m.tokenize(text, special));

// BOS/EOS ids, add_bos as llama.cpp resolves it, and is_eog for every id below 300.
const meta = (m) => ({
  bos: m.tokens.bos ?? -1,
  eos: m.tokens.eos ?? -1,
  add_bos: m._model.shouldPrependBosToken(),
  eog: Array.from({length: 300}, (_, id) => id).filter((id) => m._model.isEogToken(id)),
});

const std = await load("gemma4_synthetic.gguf");
for (const c of cases) {
  c.ids = tok(std, c.peer_text ?? c.text, c.special);
  c.detok = std._model.detokenize(Uint32Array.from(c.ids), true);
}
const vocab = meta(std);
await std.dispose();
const nobos = await load("gemma4_synthetic_nobos.gguf");
for (const c of cases) c.ids_nobos = tok(nobos, c.peer_text ?? c.text, c.special);
const vocabNobos = meta(nobos);
await nobos.dispose();

const data = {
  generated_by: "tests/tokenizer/data/regen_peer_gemma4.sh",
  peer: `node-llama-cpp ${peerVersion} (prebuilt llama.cpp)`,
  vocab,
  vocab_nobos: vocabNobos,
  cases,
};
fs.writeFileSync(outPath, JSON.stringify(data, null, 0) + "\n");
process.stderr.write(`${cases.length} cases\n`);
process.exit(0);
