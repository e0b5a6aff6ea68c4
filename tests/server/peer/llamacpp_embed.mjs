// llama.cpp's embedding of token ids (node-llama-cpp from the peer install, pooling as the
// model's metadata says): prints the vector as one JSON array.
// usage: node llamacpp_embed.mjs PEER_DIR MODEL.gguf 1,2,3
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [peerDir, modelPath, tokenList] = process.argv.slice(2);
const entry = path.join(peerDir, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const ctx = await model.createEmbeddingContext({ contextSize: 512, threads: 1 });
const tokens = tokenList.split(',').map(Number);
const e = await ctx.getEmbeddingFor(tokens);
process.stdout.write(JSON.stringify(Array.from(e.vector)) + '\n');
await ctx.dispose();
await model.dispose();
