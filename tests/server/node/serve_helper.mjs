// Starts `ridge serve` on a free loopback port and waits until /health is ready.
import { spawn } from 'node:child_process';

export const BINARY = process.env.RIDGE_BINARY;
export const MODEL = process.env.RIDGE_TEST_MODEL;

export async function startServer(extraArgs = []) {
  const defaults = { '--port': '0', '--model-name': 'stories', '--max-model-len': '256', '--max-seqs': '8' };
  const args = ['serve', '-m', MODEL, ...extraArgs];
  for (const [k, v] of Object.entries(defaults)) if (!extraArgs.includes(k)) args.push(k, v);
  const proc = spawn(BINARY, args,
                     { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ridge serve did not start:\n${stderr}`)), 30000);
    proc.stdout.on('data', (d) => {
      stdout += d;
      const m = stdout.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`ridge serve exited ${code}:\n${stderr}`)); });
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; ++i) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    proc, port, base, exited,
    stderr: () => stderr,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}

// One Prometheus sample value (first match) from /metrics.
export async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = text.match(new RegExp(`^${name.replace(/[{}"/]/g, (c) => `\\${c}`)} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}

export async function waitFor(pred, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return true;
    await new Promise((res) => setTimeout(res, 20));
  }
  return false;
}
