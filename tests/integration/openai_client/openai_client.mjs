// Drives a DanceMoE node with the real `openai` npm package (a client no one
// here wrote): a completion, a chat completion, a streamed chat completion
// and error cases. Prints one JSON object that openai_client_test.cpp checks.
//
// usage: NODE_PATH=tests/fixtures/npm node openai_client.mjs BASE_URL API_KEY MODEL
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { OpenAI } = require('openai');

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const out = {};

function describe(err) {
  return {
    class: err.constructor.name,
    status: err.status ?? null,
    param: err.param ?? null,
    code: err.code ?? null,
    type: err.type ?? null,
    message: err.message,
  };
}

const completion = await client.completions.create({
  model, prompt: 'Hello', max_tokens: 8, temperature: 0, seed: 7, stop: ['\u0000'],
});
out.completion = {
  id: completion.id, object: completion.object, model: completion.model,
  text: completion.choices[0].text, finish_reason: completion.choices[0].finish_reason,
  usage: completion.usage,
};

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say something.' },
];
const chat = await client.chat.completions.create({
  model, messages, max_tokens: 8, temperature: 0, top_p: 1,
});
out.chat = {
  id: chat.id, object: chat.object, role: chat.choices[0].message.role,
  content: chat.choices[0].message.content, finish_reason: chat.choices[0].finish_reason,
  usage: chat.usage,
};

const stream = await client.chat.completions.create({
  model, messages, max_tokens: 8, temperature: 0, stream: true,
  stream_options: { include_usage: true },
});
let content = '';
let chunks = 0;
let finish = null;
let usage = null;
let role = null;
for await (const chunk of stream) {
  chunks += 1;
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    if (choice.delta.role) role = choice.delta.role;
    if (choice.delta.content) content += choice.delta.content;
    if (choice.finish_reason) finish = choice.finish_reason;
  }
}
out.stream = { chunks, role, content, finish_reason: finish, usage };

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

out.errors = {};
try {
  await client.chat.completions.create({ model: 'no-such-model', messages });
  out.errors.unknown_model = null;
} catch (err) {
  out.errors.unknown_model = describe(err);
}
try {
  await client.completions.create({ model, prompt: 'x', temperature: 7 });
  out.errors.bad_temperature = null;
} catch (err) {
  out.errors.bad_temperature = describe(err);
}
try {
  const wrong = new OpenAI({ baseURL, apiKey: 'not-the-key', maxRetries: 0 });
  await wrong.completions.create({ model, prompt: 'x', max_tokens: 1 });
  out.errors.wrong_key = null;
} catch (err) {
  out.errors.wrong_key = describe(err);
}

console.log(JSON.stringify(out));
