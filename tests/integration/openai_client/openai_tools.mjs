// Tool calling through the real `openai` npm package (issue 16), against a
// node whose model has Qwen3's chat template: a named tool_choice (whole,
// and streamed through the client's stream helper, which assembles the
// tool_call deltas), "required", the follow-up turn with the tool's answer,
// and the 400s of bad tool requests. Prints one JSON object that
// openai_client_test.cpp checks.
//
// usage: NODE_PATH=tests/fixtures/npm node openai_tools.mjs BASE_URL API_KEY MODEL
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { OpenAI } = require('openai');

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120_000 });
const out = {};
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The current weather in a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', maxLength: 12 },
          unit: { enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
      strict: true,
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      parameters: {
        type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'],
      },
    },
  },
];
const named = { type: 'function', function: { name: 'get_weather' } };

const whole = await client.chat.completions.create({
  model, messages, tools, tool_choice: named, max_tokens: 200, temperature: 0,
});
out.named = {
  finish_reason: whole.choices[0].finish_reason,
  content: whole.choices[0].message.content,
  tool_calls: whole.choices[0].message.tool_calls,
};

// The stream helper assembles the deltas into a final message.
const stream = client.chat.completions.stream({
  model, messages, tools, tool_choice: named, max_tokens: 200, temperature: 0,
});
let argumentsDone = null;
stream.on('tool_calls.function.arguments.done', (e) => { argumentsDone = e; });
const final = await stream.finalChatCompletion();
out.streamed = {
  finish_reason: final.choices[0].finish_reason,
  content: final.choices[0].message.content,
  tool_calls: final.choices[0].message.tool_calls,
  arguments_done: argumentsDone && { name: argumentsDone.name, index: argumentsDone.index,
    parsed_arguments: argumentsDone.parsed_arguments },
};

out.required = [];
for (const seed of [11, 12]) {
  const r = await client.chat.completions.create({
    model, messages, tools, tool_choice: 'required', max_tokens: 200, temperature: 1, seed,
  });
  out.required.push({ finish_reason: r.choices[0].finish_reason,
    tool_calls: r.choices[0].message.tool_calls });
}

// The next turn: the assistant's call as the client got it, and the tool's answer.
const call = whole.choices[0].message.tool_calls[0];
const followup = await client.chat.completions.create({
  model,
  messages: [
    ...messages,
    whole.choices[0].message,
    { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 24 }) },
  ],
  tools,
  max_tokens: 8,
});
out.followup = {
  finish_reason: followup.choices[0].finish_reason,
  message: followup.choices[0].message,
  prompt_tokens: followup.usage.prompt_tokens,
  first_prompt_tokens: whole.usage.prompt_tokens,
};

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
  no_tool_call_id: await badRequest(() => client.chat.completions.create({
    model, tools, messages: [...messages, { role: 'tool', content: 'sunny' }] })),
  unknown_function: await badRequest(() => client.chat.completions.create({
    model, messages, tools, tool_choice: { type: 'function', function: { name: 'get_news' } } })),
  bad_kwargs: await badRequest(() => client.chat.completions.create({
    model, messages, chat_template_kwargs: 'no thinking' })),
};

console.log(JSON.stringify(out));
