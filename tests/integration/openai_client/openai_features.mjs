// Drives a DanceMoE node with the real `openai` npm package through the
// OpenAI features clients use (issue 16): fresh seeds, n, logprobs (also
// streamed), penalties, logit_bias, list and token-id prompts,
// max_completion_tokens, response_format json_object and json_schema (also
// streamed), ignored fields, /tokenize and /detokenize, and a 400 naming the
// field for each bad value. Prints one JSON object that
// openai_client_test.cpp checks.
//
// usage: NODE_PATH=tests/fixtures/npm node openai_features.mjs BASE_URL API_KEY MODEL
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { OpenAI } = require('openai');

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120_000 });
const out = {};
const messages = [{ role: 'user', content: 'Describe a person.' }];

// Seeds: without one every request differs; with one it repeats.
const unseeded = [];
for (let i = 0; i < 3; i += 1) {
  const c = await client.completions.create({ model, prompt: 'Once', max_tokens: 12, temperature: 1 });
  unseeded.push(c.choices[0].text);
}
const seeded = [];
for (let i = 0; i < 2; i += 1) {
  const c = await client.completions.create({
    model, prompt: 'Once', max_tokens: 12, temperature: 1, seed: 1234,
  });
  seeded.push(c.choices[0].text);
}
out.seeds = { unseeded, seeded };

// n > 1: choice 0 of a seeded request is the n = 1 answer.
const three = await client.chat.completions.create({
  model, messages, n: 3, max_tokens: 10, temperature: 1, seed: 77,
});
const one = await client.chat.completions.create({
  model, messages, max_tokens: 10, temperature: 1, seed: 77,
});
out.n = {
  indexes: three.choices.map((c) => c.index),
  contents: three.choices.map((c) => c.message.content),
  single: one.choices[0].message.content,
  usage: three.usage,
};

// logprobs, chat and completions, whole and streamed.
const chatLp = await client.chat.completions.create({
  model, messages, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 2,
});
out.chat_logprobs = {
  content: chatLp.choices[0].logprobs.content,
  completion_tokens: chatLp.usage.completion_tokens,
};
const streamLp = await client.chat.completions.create({
  model, messages, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 2,
  stream: true, stream_options: { include_usage: true },
});
let streamedLp = [];
let streamedText = '';
let streamUsage = null;
for await (const chunk of streamLp) {
  if (chunk.usage) streamUsage = chunk.usage;
  for (const choice of chunk.choices) {
    if (choice.delta.content) streamedText += choice.delta.content;
    if (choice.logprobs && choice.logprobs.content) streamedLp = streamedLp.concat(choice.logprobs.content);
  }
}
out.stream_logprobs = { tokens: streamedLp.map((t) => t.token), text: streamedText,
  whole_tokens: chatLp.choices[0].logprobs.content.map((t) => t.token),
  whole_text: chatLp.choices[0].message.content, usage: streamUsage };
const complLp = await client.completions.create({
  model, prompt: 'Hello', max_tokens: 5, temperature: 0, logprobs: 3,
});
out.completion_logprobs = complLp.choices[0].logprobs;

// Penalties, logit_bias, prompts as lists, max_completion_tokens.
const penalised = await client.completions.create({
  model, prompt: 'Hello', max_tokens: 8, temperature: 0, presence_penalty: 1.5,
  frequency_penalty: 1.0, repetition_penalty: 1.3,
});
out.penalised = penalised.choices[0].text;
const biased = await client.completions.create({
  model, prompt: 'Hello', max_tokens: 4, temperature: 0, logit_bias: { 70: 100 },
});
out.biased = biased.choices[0].text;
const listed = await client.completions.create({
  model, prompt: ['Hello', 'Good morning'], max_tokens: 3, temperature: 0,
});
out.listed = listed.choices.map((c) => ({ index: c.index, text: c.text }));
const ids = await client.completions.create({
  model, prompt: [[72, 101, 108], [66, 121]], max_tokens: 3, temperature: 0,
});
out.token_prompts = { n: ids.choices.length, usage: ids.usage };
const capped = await client.chat.completions.create({
  model, messages, max_completion_tokens: 3, temperature: 0, ignore_eos: true,
});
out.max_completion_tokens = capped.usage.completion_tokens;

// response_format.
// A random-weight model may stay inside a JSON string past any max_tokens,
// so several choices: each one that stops must parse.
const object = await client.chat.completions.create({
  model, messages, max_tokens: 300, temperature: 1, seed: 5, n: 4,
  response_format: { type: 'json_object' },
});
out.json_object = object.choices.map((c) => ({ content: c.message.content,
  finish_reason: c.finish_reason }));
const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    role: { enum: ['admin', 'user'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 3 },
  },
  required: ['name', 'age', 'role', 'tags'],
  additionalProperties: false,
};
out.json_schema = [];
for (const seed of [1, 2, 3]) {
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 300, temperature: 1, seed,
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } },
  });
  out.json_schema.push({ content: r.choices[0].message.content,
    finish_reason: r.choices[0].finish_reason });
}
const schemaStream = await client.chat.completions.create({
  model, messages, max_tokens: 300, temperature: 0, stream: true,
  response_format: { type: 'json_schema', json_schema: { name: 'person', schema } },
});
let schemaText = '';
for await (const chunk of schemaStream) {
  for (const choice of chunk.choices) if (choice.delta.content) schemaText += choice.delta.content;
}
out.json_schema_stream = schemaText;

// Fields of OpenAI / vLLM / llama-server the node accepts and ignores.
const ignored = await client.chat.completions.create({
  model, messages, max_tokens: 2, store: true, metadata: { run: 'x' }, service_tier: 'auto',
  verbosity: 'low', reasoning_effort: 'low', // the last one reaches the template, not ignored
});
out.ignored_fields = ignored.choices.length;

// /tokenize and /detokenize (llama-server's), over plain fetch.
const root = baseURL.replace(/\/v1$/, '');
const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` };
const tok = await (await fetch(`${root}/tokenize`, {
  method: 'POST', headers, body: JSON.stringify({ content: 'Hello world', with_pieces: true }),
})).json();
const detok = await (await fetch(`${root}/detokenize`, {
  method: 'POST', headers, body: JSON.stringify({ tokens: tok.tokens.map((t) => t.id) }),
})).json();
out.tokenize = { tokens: tok.tokens, content: detok.content };

// Bad values get a 400 naming the field.
async function badRequest(make) {
  try {
    await make();
    return null;
  } catch (err) {
    return { class: err.constructor.name, status: err.status ?? null, param: err.param ?? null,
      code: err.code ?? null, message: err.message };
  }
}
out.errors = {
  n: await badRequest(() => client.chat.completions.create({ model, messages, n: 0 })),
  top_logprobs: await badRequest(() => client.chat.completions.create({
    model, messages, logprobs: true, top_logprobs: 21 })),
  presence_penalty: await badRequest(() => client.completions.create({
    model, prompt: 'x', presence_penalty: 3 })),
  logit_bias: await badRequest(() => client.completions.create({
    model, prompt: 'x', logit_bias: { abc: 1 } })),
  logit_bias_range: await badRequest(() => client.completions.create({
    model, prompt: 'x', logit_bias: { 99999999: 1 } })),
  response_format: await badRequest(() => client.chat.completions.create({
    model, messages, response_format: { type: 'yaml' } })),
  schema: await badRequest(() => client.chat.completions.create({
    model, messages, response_format: { type: 'json_schema', json_schema: { name: 'z',
      schema: { type: 'object', properties: { zip: { type: 'string', pattern: '^[0-9]+$' } } } } } })),
  misspelt: await badRequest(() => client.completions.create({
    model, prompt: 'x', presense_penalty: 1 })),
  prompt_ids: await badRequest(() => client.completions.create({ model, prompt: [1, -5] })),
  // The synthetic tokenizer's ChatML template renders no tools
  // (openai_tools.mjs calls tools on a model whose template does).
  tools: await badRequest(() => client.chat.completions.create({
    model, messages, tools: [{ type: 'function', function: { name: 'f' } }] })),
};

console.log(JSON.stringify(out));
