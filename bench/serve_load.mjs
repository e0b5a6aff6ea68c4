#!/usr/bin/env node
// Load generator for `ridge serve` (loopback, bounded): Poisson arrivals at several request
// rates, streaming completions with fixed-length prompts and outputs; reports throughput and
// TTFT / inter-token / end-to-end percentiles per rate, and at saturation (every request at
// once) compares generated tokens per second with `ridge batch` offline on the same work.
//
//   node bench/serve_load.mjs --binary build/ridge --model qwen3-0.6b-q8_0.gguf \
//        [--rates 0.5,1,2,4] [--requests 16] [--prompt-len 64] [--max-tokens 64] [--threads 2]
//        [--url http://127.0.0.1:8080 (use a running server instead)] [--json out.json]
// No dependencies beyond Node >= 18 (fetch).
import { spawn, execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function args() {
  const a = { rates: '0.5,1,2,4', requests: 16, 'prompt-len': 64, 'max-tokens': 64, threads: 2,
              'max-seqs': 16, seed: 1 };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) {
    if (!v[i].startsWith('--')) throw new Error(`unexpected argument ${v[i]}`);
    a[v[i].slice(2)] = v[i + 1];
  }
  for (const k of ['requests', 'prompt-len', 'max-tokens', 'threads', 'max-seqs', 'seed']) a[k] = Number(a[k]);
  a.rates = String(a.rates).split(',').map(Number);
  return a;
}

// Deterministic pseudo-random prompts (token ids), distinct per request so no prefix is shared.
function prompts(n, len, seed) {
  let s = seed >>> 0;
  const rnd = () => { s = (s * 1664525 + 1013904223) >>> 0; return s; };
  return Array.from({ length: n }, () => Array.from({ length: len }, () => 300 + (rnd() % 3000)));
}

function pct(xs, p) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))];
}

async function startServer(a) {
  const proc = spawn(a.binary, ['serve', '-m', a.model, '--port', '0', '--model-name', 'bench',
    '-t', String(a.threads), '--max-seqs', String(a['max-seqs']),
    '--max-model-len', String(a['prompt-len'] + a['max-tokens'] + 8)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (c) => reject(new Error(`ridge serve exited ${c}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return { base, stop: () => new Promise((res) => { proc.on('exit', res); proc.kill('SIGTERM'); }) };
}

// One streaming request; times in ms relative to its send time.
async function one(base, prompt, maxTokens) {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt, max_tokens: maxTokens, temperature: 0,
                           ignore_eos: true, stream: true, stream_options: { include_usage: true },
                           // one chunk per token even when a token has no text (random weights)
                           logprobs: 0 }),
  });
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  const dec = new TextDecoder();
  let buf = '';
  const times = [];
  let usage = null;
  for await (const part of r.body) {
    buf += dec.decode(part, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(6, i);
      buf = buf.slice(i + 2);
      if (ev === '[DONE]') continue;
      const j = JSON.parse(ev);
      if (j.usage) usage = j.usage;
      const n = j.choices.length ? (j.choices[0].logprobs?.tokens?.length ?? 0) : 0;
      for (let k = 0; k < n; ++k) times.push(performance.now() - t0);
    }
  }
  const itl = times.slice(1).map((t, k) => t - times[k]).filter((d) => d > 0.05);
  return { ttft: times[0], itl, e2e: performance.now() - t0, tokens: usage?.completion_tokens ?? 0 };
}

async function runRate(base, a, rate, ps) {
  // rate 0 = saturation: every request at t = 0. Otherwise exponential inter-arrival gaps.
  let s = a.seed * 7919;
  const rnd = () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648; };
  const t0 = performance.now();
  let at = 0;
  const jobs = ps.map((p) => {
    const start = at;
    if (rate > 0) at += -Math.log(1 - rnd()) / rate * 1000;
    return new Promise((res) => setTimeout(res, start)).then(() => one(base, p, a['max-tokens']));
  });
  const rs = await Promise.all(jobs);
  const wall = (performance.now() - t0) / 1000;
  const tokens = rs.reduce((x, r) => x + r.tokens, 0);
  const itl = rs.flatMap((r) => r.itl);
  return { rate: rate || 'max', requests: rs.length, wall_s: wall, gen_tok_per_s: tokens / wall,
           ttft_ms: { p50: pct(rs.map((r) => r.ttft), 50), p90: pct(rs.map((r) => r.ttft), 90), p99: pct(rs.map((r) => r.ttft), 99) },
           itl_ms: { p50: pct(itl, 50), p90: pct(itl, 90), p99: pct(itl, 99) },
           e2e_ms: { p50: pct(rs.map((r) => r.e2e), 50), p99: pct(rs.map((r) => r.e2e), 99) } };
}

// `ridge batch` (offline, no HTTP) on the same prompts: its generated tokens per second.
function offline(a, ps) {
  const file = join(tmpdir(), `serve_load_${process.pid}.jsonl`);
  writeFileSync(file, ps.map((t) => JSON.stringify({ tokens: t, max_tokens: a['max-tokens'],
                                                     temperature: 0 })).join('\n') + '\n');
  try {
    const out = execFileSync(a.binary, ['batch', '-m', a.model, '--prompts', file, '-q',
      '--ignore-eos', '-t', String(a.threads), '--max-seqs', String(a['max-seqs']),
      '--max-model-len', String(a['prompt-len'] + a['max-tokens'] + 8)],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600000 });
    const m = out.match(/([\d.]+) generated tok\/s/);
    return m ? Number(m[1]) : null;
  } catch (e) {
    console.error(`ridge batch unavailable or failed: ${String(e.stderr || e.message).split('\n')[0]}`);
    return null;
  } finally {
    rmSync(file, { force: true });
  }
}

const a = args();
const server = a.url ? { base: a.url, stop: async () => {} } : await startServer(a);
const ps = prompts(a.requests, a['prompt-len'], a.seed);
await one(server.base, ps[0].slice(0, 8), 4);  // warm-up
const results = [];
for (const rate of [...a.rates, 0]) {
  const r = await runRate(server.base, a, rate, ps);
  results.push(r);
  console.log(`rate ${String(r.rate).padStart(4)} req/s: ${r.gen_tok_per_s.toFixed(1)} gen tok/s, ` +
    `TTFT p50/p90/p99 ${r.ttft_ms.p50.toFixed(0)}/${r.ttft_ms.p90.toFixed(0)}/${r.ttft_ms.p99.toFixed(0)} ms, ` +
    `ITL p50/p90/p99 ${r.itl_ms.p50.toFixed(1)}/${r.itl_ms.p90.toFixed(1)}/${r.itl_ms.p99.toFixed(1)} ms, ` +
    `e2e p50 ${r.e2e_ms.p50.toFixed(0)} ms (${r.requests} requests in ${r.wall_s.toFixed(1)} s)`);
}
await server.stop();
const sat = results[results.length - 1].gen_tok_per_s;
const off = a.url ? null : offline(a, ps);
if (off) {
  console.log(`saturation: server ${sat.toFixed(1)} gen tok/s vs ridge batch ${off.toFixed(1)} ` +
              `(overhead ${((1 - sat / off) * 100).toFixed(1)}%)`);
}
if (a.json) writeFileSync(a.json, JSON.stringify({ args: a, results, offline_gen_tok_per_s: off }, null, 2));
