// The official OpenAI JavaScript client (npm `openai`, pinned in package.json) against a running
// hearsay node: completions, chat completions, streaming chat, models, errors, and cached_tokens on
// a repeated prompt. Run by the integration test OpenAiJsClient (tests/integration), which starts
// the node and installs the client with install-client.sh.
//
// Usage: node openai_client_test.cjs URL DEPS_DIR, where URL is http://host:port of the node and
// DEPS_DIR the folder install-client.sh printed (or HEARSAY_URL / HEARSAY_JS_DEPS in the
// environment). Uses node:test; a failure exits non-zero.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { createRequire } = require('node:module');
const { test } = require('node:test');

const baseURL = process.argv[2] || process.env.HEARSAY_URL;
const depsDir = process.argv[3] || process.env.HEARSAY_JS_DEPS;
if (!baseURL || !depsDir) {
  console.error('usage: node openai_client_test.cjs URL DEPS_DIR');
  process.exit(2);
}
const OpenAI = createRequire(path.join(depsDir, 'package.json'))('openai');

// No retries: a retried failure would hide exactly what this test looks for.
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20000 });

async function modelId() {
  const page = await client.models.list();
  assert.ok(page.data.length >= 1, 'the node lists at least one model');
  return page.data[0].id;
}

function assertUsage(usage, maxTokens) {
  assert.ok(usage, 'usage is present');
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, 'prompt_tokens > 0');
  assert.ok(usage.completion_tokens > 0 && usage.completion_tokens <= maxTokens,
    `0 < completion_tokens (${usage.completion_tokens}) <= ${maxTokens}`);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  assert.ok(usage.prompt_tokens_details, 'usage.prompt_tokens_details is present');
  assert.ok(Number.isInteger(usage.prompt_tokens_details.cached_tokens), 'cached_tokens is an integer');
}

test('models.list names the served model', async () => {
  const id = await modelId();
  assert.equal(typeof id, 'string');
  assert.ok(id.length > 0);
});

test('completions.create returns text and usage', async () => {
  const model = await modelId();
  const res = await client.completions.create({ model, prompt: 'The quick brown fox', max_tokens: 12 });
  assert.equal(res.object, 'text_completion');
  assert.equal(res.model, model);
  assert.equal(res.choices.length, 1);
  assert.equal(typeof res.choices[0].text, 'string');
  assert.ok(res.choices[0].text.trim().length > 0, 'the completion has text');
  assert.ok(['length', 'stop'].includes(res.choices[0].finish_reason));
  assertUsage(res.usage, 12);
});

test('chat.completions.create returns an assistant message and usage', async () => {
  const model = await modelId();
  const res = await client.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Name three colours.' },
    ],
    max_tokens: 10,
  });
  assert.equal(res.object, 'chat.completion');
  assert.equal(res.choices.length, 1);
  assert.equal(res.choices[0].message.role, 'assistant');
  assert.ok(res.choices[0].message.content.trim().length > 0, 'the message has content');
  assertUsage(res.usage, 10);
});

test('streaming chat yields deltas, a finish reason and usage', async () => {
  const model = await modelId();
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Count slowly.' }],
    max_tokens: 16,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    chunks += 1;
    assert.equal(chunk.object, 'chat.completion.chunk');
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(chunks >= 2, `several chunks arrived (${chunks})`);
  assert.ok(text.trim().length > 0, 'the deltas carry text');
  assert.ok(['length', 'stop'].includes(finish), `finish_reason (${finish})`);
  assertUsage(usage, 16);
  assert.equal(usage.completion_tokens > 1, true);
});

test('a repeated prompt reports cached_tokens', async () => {
  const model = await modelId();
  // Long enough for many 16-token cache blocks; unique per run so earlier runs cannot help.
  const words = [];
  for (let i = 0; i < 400; i++) words.push(`w${i % 97}x${(i * 31) % 101}`);
  const prompt = `run ${process.pid}-${Date.now()} ${words.join(' ')}`;
  const first = await client.completions.create({ model, prompt, max_tokens: 4 });
  assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0, 'a new prompt has no cached tokens');
  const second = await client.completions.create({ model, prompt, max_tokens: 4 });
  const promptTokens = second.usage.prompt_tokens;
  const cached = second.usage.prompt_tokens_details.cached_tokens;
  assert.equal(promptTokens, first.usage.prompt_tokens);
  // Every full 16-token block of the prompt was cached by the first request; at most the last
  // (partial) block and one recomputed block may miss.
  assert.ok(cached >= promptTokens - 32 && cached <= promptTokens,
    `cached_tokens ${cached} covers the prompt's ${promptTokens} tokens but for the last blocks`);
});

test('an unknown model is a 404 the client surfaces as NotFoundError', async () => {
  await assert.rejects(
    client.completions.create({ model: 'no-such-model', prompt: 'hi', max_tokens: 2 }),
    (err) => {
      assert.ok(err instanceof OpenAI.NotFoundError, `NotFoundError, got ${err?.constructor?.name}`);
      assert.equal(err.status, 404);
      return true;
    });
});

test('invalid input is a 400 the client surfaces as BadRequestError', async () => {
  const model = await modelId();
  await assert.rejects(
    client.completions.create({ model, prompt: '', max_tokens: 2 }),
    (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `BadRequestError, got ${err?.constructor?.name}`);
      assert.equal(err.status, 400);
      return true;
    });
});
