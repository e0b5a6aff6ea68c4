// Shared by the scripts that record llama.cpp's token ids through the peer (node-llama-cpp's
// prebuilt llama.cpp, ../shared/peer): tools/gen_tokenizer_peer_data.mjs and
// tests/tokenizer/data/regen_peer_gpt4o.mjs.
import {createRequire} from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

// node-llama-cpp from the peer folder ($LLAMACPP_PEER_DIR or ~/.cache/llamacpp-peer, as
// ../shared/peer/install.sh installs it): its module and package version.
export async function loadPeer() {
  const peerDir = process.env.LLAMACPP_PEER_DIR ?? path.join(os.homedir(), ".cache/llamacpp-peer");
  const require = createRequire(path.join(peerDir, "package.json"));
  const module = await import(require.resolve("node-llama-cpp"));
  const pkg = JSON.parse(fs.readFileSync(path.join(peerDir, "node_modules/node-llama-cpp/package.json"), "utf8"));
  return {module, version: pkg.version};
}

// mulberry32: a tiny seeded PRNG so the texts are the same on every run.
export function rng(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The text llama.cpp's decoder makes of the bytes `hex` (its unicode_cpts_from_utf8: lead-bit
// rules only; a byte that does not start a complete sequence becomes U+FFFD, overlong forms
// decode to their code point). Invalid UTF-8 cannot reach llama.cpp through a JavaScript string.
export function llamaDecode(hex) {
  const b = Buffer.from(hex, "hex");
  let out = "";
  for (let i = 0; i < b.length;) {
    const c = b[i], cont = (k) => i + k < b.length && (b[i + k] & 0xC0) === 0x80;
    let cpt = -1, n = 1;
    if (c < 0x80) cpt = c;
    else if ((c & 0xE0) === 0xC0 && cont(1)) { cpt = ((c & 0x1F) << 6) | (b[i + 1] & 0x3F); n = 2; }
    else if ((c & 0xF0) === 0xE0 && cont(1) && cont(2)) { cpt = ((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F); n = 3; }
    else if ((c & 0xF8) === 0xF0 && cont(1) && cont(2) && cont(3)) {
      cpt = ((c & 0x07) << 18) | ((b[i + 1] & 0x3F) << 12) | ((b[i + 2] & 0x3F) << 6) | (b[i + 3] & 0x3F); n = 4;
    }
    if (cpt < 0 || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF)) { cpt = 0xFFFD; n = 1; }
    out += String.fromCodePoint(cpt);
    i += n;
  }
  return out;
}
