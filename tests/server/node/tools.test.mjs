// The official `openai` client through a multi-turn tool-calling conversation and a json_schema
// request against `ridge serve` on stories260K with Qwen3's chat template (from the model's
// tokenizer.chat_template replacement, --chat-template-file). The tiny model cannot choose tools
// itself, so its first answer is steered by the `grammar` extension into Qwen3's tool-call
// syntax; everything else (template rendering of tool calls and results, parsing the output into
// tool_calls, streaming deltas, finish reasons) is the real path.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './serve_helper.mjs';

const TEMPLATE = `${process.env.RIDGE_SHARED_DIR}/templates/Qwen-Qwen3-0.6B.jinja`;
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const gbnf = (text) => `root ::= ${JSON.stringify(text)}`;

let srv;
let client;
before(async () => {
  srv = await startServer(['--chat-template-file', TEMPLATE, '--max-model-len', '1024']);
  client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});
after(async () => { await srv.stop(); });

const question = [{ role: 'user', content: 'What is the weather in Paris?' }];

test('tool call: the assistant message carries tool_calls and finish_reason "tool_calls"', async () => {
  const r = await client.chat.completions.create({
    model: 'stories', messages: question, tools, temperature: 0, max_tokens: 100, grammar: gbnf(CALL),
  });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  assert.equal(c.message.tool_calls[0].type, 'function');
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(c.message.tool_calls[0].function.arguments), { city: 'Paris' });
});

test('tool call, streamed: the client assembles the same call from the deltas', async () => {
  const stream = client.beta.chat.completions.stream({
    model: 'stories', messages: question, tools, temperature: 0, max_tokens: 100, grammar: gbnf(CALL),
  });
  const done = await stream.finalChatCompletion();
  const c = done.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.tool_calls.length, 1);
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(c.message.tool_calls[0].function.arguments), { city: 'Paris' });
});

test('multi-turn: the call and its result go back through the template', async () => {
  const first = await client.chat.completions.create({
    model: 'stories', messages: question, tools, temperature: 0, max_tokens: 100, grammar: gbnf(CALL),
  });
  const call = first.choices[0].message.tool_calls[0];
  const messages = [...question, first.choices[0].message,
                    { role: 'tool', tool_call_id: call.id, content: '{"sky": "clear", "celsius": 21}' }];
  // The prompt shows the call and the result the way Qwen3's template writes them.
  const applied = await (await fetch(`${srv.base}/apply-template`, {
    method: 'POST', body: JSON.stringify({ messages, tools }) })).json();
  assert.ok(applied.prompt.includes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'),
            applied.prompt);
  assert.ok(applied.prompt.includes('<tool_response>\n{"sky": "clear", "celsius": 21}\n</tool_response>'),
            applied.prompt);
  assert.ok(applied.prompt.includes('"name": "get_weather"'), 'tool definitions are in the system turn');
  assert.ok(applied.prompt.endsWith('<|im_start|>assistant\n'), applied.prompt);
  const second = await client.chat.completions.create({
    model: 'stories', messages, tools, temperature: 0, max_tokens: 64, grammar: gbnf('It is 21 degrees and clear.'),
  });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.equal(second.choices[0].message.content, 'It is 21 degrees and clear.');
  assert.equal(second.choices[0].message.tool_calls, undefined);
  const streamed = await client.beta.chat.completions.stream({
    model: 'stories', messages, tools, temperature: 0, max_tokens: 64, grammar: gbnf('It is 21 degrees and clear.'),
  }).finalChatCompletion();
  assert.equal(streamed.choices[0].message.content, 'It is 21 degrees and clear.');
});

test('json_schema: the content parses and matches the schema', async () => {
  // Thinking off: Qwen3's template closes an empty <think> block, so the JSON starts at once
  // (with thinking on, the grammar lets the model reason first).
  const schema = {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 12 }, mood: { enum: ['happy', 'sad'] },
                  friends: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 2 } },
    required: ['name', 'mood', 'friends'],
    additionalProperties: false,
  };
  const r = await client.chat.completions.create({
    model: 'stories', messages: [{ role: 'user', content: 'Describe Lily as JSON.' }], temperature: 0,
    max_tokens: 200, chat_template_kwargs: { enable_thinking: false }, response_format: { type: 'json_schema', json_schema: { name: 'lily', schema, strict: true } },
  });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'stop', c.message.content);
  const v = JSON.parse(c.message.content);
  assert.deepEqual(Object.keys(v), ['name', 'mood', 'friends']);
  assert.equal(typeof v.name, 'string');
  assert.ok(v.name.length <= 12);
  assert.ok(['happy', 'sad'].includes(v.mood));
  assert.ok(Array.isArray(v.friends) && v.friends.length <= 2);
});

test('harmless OpenAI fields are accepted; unsupported ones are 400s naming the field', async () => {
  const r = await client.chat.completions.create({
    model: 'stories', messages: question, max_tokens: 4, store: false, metadata: { run: 'test' },
    service_tier: 'auto',
  });
  assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
  await assert.rejects(client.chat.completions.create({
    model: 'stories', messages: question, max_tokens: 4, audio: { voice: 'alloy', format: 'wav' } }),
  (e) => e.status === 400 && e.param === 'audio');
});
