#!/usr/bin/env node
// llama.cpp's tokenizer speed on a text file, through the peer (node-llama-cpp's prebuilt
// llama.cpp): loads the vocabulary once, then times only llama_tokenize calls.
//   node tools/tokenizer_peer_bench.mjs MODEL.gguf TEXT_FILE [REPEATS]
// Prints one JSON line: {"bytes":..,"tokens":..,"median_s":..,"mb_s":..,"cpu_median_s":..,"cpu_mb_s":..}
// (wall and process CPU time of the tokenize call; CPU time is the fairer figure on a busy machine)
import {createRequire} from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [modelPath, textPath, repeatsArg] = process.argv.slice(2);
if (!modelPath || !textPath) {
  process.stderr.write("usage: tokenizer_peer_bench.mjs MODEL.gguf TEXT_FILE [REPEATS]\n");
  process.exit(2);
}
const peerDir = process.env.LLAMACPP_PEER_DIR ?? path.join(os.homedir(), ".cache/llamacpp-peer");
const require = createRequire(path.join(peerDir, "package.json"));
const {getLlama, LlamaLogLevel} = await import(require.resolve("node-llama-cpp"));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0, vocabOnly: true});
const text = fs.readFileSync(textPath, "utf8");
const bytes = Buffer.byteLength(text, "utf8");
const repeats = Number(repeatsArg ?? 5);
const times = [], cpu = [];
let tokens = 0;
for (let i = 0; i < repeats; i++) {
  const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
  tokens = model.tokenize(text, false).length;
  const c = process.cpuUsage(c0);
  times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  cpu.push((c.user + c.system) / 1e6);
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
process.stdout.write(JSON.stringify({bytes, tokens, median_s: median(times), mb_s: bytes / 1e6 / median(times),
  cpu_median_s: median(cpu), cpu_mb_s: bytes / 1e6 / median(cpu)}) + "\n");
await model.dispose();
process.exit(0);
