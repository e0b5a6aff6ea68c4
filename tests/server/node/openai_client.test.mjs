// The official `openai` client against `ridge serve` on stories260K (a real trained model):
// content against llama.cpp's verified greedy output, usage counts, finish reasons, streaming,
// n > 1, errors as the client's typed exceptions, concurrency, aborts and SIGTERM drain.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, metric, waitFor } from './serve_helper.mjs';

// llama.cpp (llama-completion --temp 0 -p "Once upon a time"), see shared/models/README.md.
const GREEDY = ', there was a little girl named Lily. She loved to play outside in the park. ' +
  'One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily\'s mom said';

let srv;
let client;
before(async () => {
  srv = await startServer();
  client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});
after(async () => { await srv.stop(); });

test('completion: greedy text is llama.cpp\'s, usage and finish_reason', async () => {
  const r = await client.completions.create({ model: 'stories', prompt: 'Once upon a time',
                                              max_tokens: 24, temperature: 0 });
  const text = r.choices[0].text;
  assert.ok(text.length > 30, text);
  assert.ok(GREEDY.startsWith(text), `got ${JSON.stringify(text)}`);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 24);
  const tok = await (await fetch(`${srv.base}/tokenize`, { method: 'POST',
    body: JSON.stringify({ prompt: 'Once upon a time' }) })).json();
  assert.equal(r.usage.prompt_tokens, tok.count);
  assert.equal(r.usage.total_tokens, tok.count + 24);
  assert.ok(r.timings.ttft_ms >= 0 && r.timings.engine_bytes_moved > 0);
});

test('completion: streaming deltas add up to the non-streaming text', async () => {
  const args = { model: 'stories', prompt: 'Once upon a time', max_tokens: 30, temperature: 0 };
  const whole = await client.completions.create(args);
  const stream = await client.completions.create({ ...args, stream: true,
                                                   stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 30);
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
});

test('chat: non-streaming and streaming agree; stop string ends with "stop"', async () => {
  const messages = [{ role: 'system', content: 'You tell stories.' },
                    { role: 'user', content: 'Tell me about Lily.' }];
  const r = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 20,
                                                   temperature: 0 });
  const content = r.choices[0].message.content;
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(content.length > 0);
  assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 10);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  let streamed = '';
  const stream = await client.chat.completions.create({ model: 'stories', messages,
                                                        max_tokens: 20, temperature: 0,
                                                        stream: true });
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(streamed, content);
  // Stop at a word the greedy text contains: the text ends right before it.
  const word = content.trim().split(/\s+/)[2];
  const s = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 20,
                                                   temperature: 0, stop: [word] });
  assert.equal(s.choices[0].finish_reason, 'stop');
  assert.equal(s.choices[0].message.content, content.slice(0, content.indexOf(word)));
});

test('n = 3 choices, seeded sampling, logprobs', async () => {
  const args = { model: 'stories', messages: [{ role: 'user', content: 'A story about a dog and a cat.' }],
                 max_tokens: 16, temperature: 1.0, seed: 7, n: 3, logprobs: true, top_logprobs: 2 };
  const a = await client.chat.completions.create(args);
  const b = await client.chat.completions.create(args);
  assert.equal(a.choices.length, 3);
  for (let i = 0; i < 3; ++i) assert.equal(a.choices[i].message.content, b.choices[i].message.content);
  const lp = a.choices[0].logprobs.content;
  assert.ok(lp.length > 0);
  assert.ok(lp.every((t) => t.logprob <= 0 && t.top_logprobs.length === 2));
  assert.ok(a.usage.completion_tokens >= 3);
});

test('errors arrive as the client\'s typed exceptions', async () => {
  const base = { model: 'stories', messages: [{ role: 'user', content: 'x' }] };
  await assert.rejects(client.chat.completions.create({ ...base, temperature: 5 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  await assert.rejects(client.chat.completions.create({ ...base, messages: [] }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages');
  await assert.rejects(client.chat.completions.create({ ...base, model: 'gpt-4o' }),
                       (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(client.chat.completions.create({ ...base, max_tokens: 1000 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens');
  await assert.rejects(client.completions.create({ model: 'stories', prompt: 'word '.repeat(400) }),
                       (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'stories');
});

test('concurrent streams give the text each request gets alone; blocks are freed', async () => {
  const prompts = ['Once upon a time', 'The cat', 'Tom had a big', 'One day, Lily', 'The sun was'];
  const alone = [];
  for (const p of prompts) {
    alone.push((await client.completions.create({ model: 'stories', prompt: p, max_tokens: 40,
                                                  temperature: 0 })).choices[0].text);
  }
  const together = await Promise.all(prompts.map(async (p) => {
    const stream = await client.completions.create({ model: 'stories', prompt: p, max_tokens: 40,
                                                     temperature: 0, stream: true });
    let t = '';
    for await (const c of stream) t += c.choices[0]?.text ?? '';
    return t;
  }));
  assert.deepEqual(together, alone);
  assert.ok(await waitFor(async () => (await metric(srv.base, 'ridge_kv_blocks_used')) === 0));
});

test('aborting a stream frees its KV blocks at once', async () => {
  // A long request (2000 tokens) so the abort surely lands mid-stream.
  const s = await startServer(['--max-model-len', '2048']);
  try {
    const c = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'x', maxRetries: 0 });
    const ctl = new AbortController();
    const stream = await c.completions.create({ model: 'stories', prompt: 'Once upon a time',
      max_tokens: 2000, temperature: 0, ignore_eos: true, stream: true }, { signal: ctl.signal });
    let n = 0;
    try {
      for await (const chunk of stream) { if (++n === 3) ctl.abort(); }
    } catch { /* the client may or may not surface the abort */ }
    assert.ok(n >= 3 && n < 1000, `chunks seen: ${n}`);
    assert.ok(await waitFor(async () => (await metric(s.base, 'ridge_kv_blocks_used')) === 0
                                     && (await metric(s.base, 'ridge_running_sequences')) === 0, 2000));
    const aborted = await metric(s.base, 'ridge_requests_total{endpoint="/v1/completions",status="499"}');
    assert.equal(aborted, 1);
    assert.ok((await metric(s.base, 'ridge_generated_tokens_total')) < 1000);
  } finally {
    await s.stop();
  }
});

test('api key: 401 without or with a wrong key', async () => {
  const keyed = await startServer(['--api-key', 'k3y']);
  try {
    const bad = new OpenAI({ baseURL: `${keyed.base}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    const good = new OpenAI({ baseURL: `${keyed.base}/v1`, apiKey: 'k3y', maxRetries: 0 });
    const r = await good.completions.create({ model: 'stories', prompt: 'Hi', max_tokens: 3 });
    assert.equal(r.usage.completion_tokens <= 3, true);
  } finally {
    await keyed.stop();
  }
});

test('SIGTERM drains: the in-flight request finishes, new ones are refused, exit 0', async () => {
  const s = await startServer();
  const c = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'x', maxRetries: 0 });
  const inflight = c.completions.create({ model: 'stories', prompt: 'Once upon a time',
                                          max_tokens: 200, temperature: 0, ignore_eos: true });
  await waitFor(async () => (await metric(s.base, 'ridge_http_requests_in_flight')) === 1);
  s.proc.kill('SIGTERM');
  const r = await inflight;
  assert.equal(r.usage.completion_tokens, 200);
  const { code } = await s.exited;
  assert.equal(code, 0);
});
