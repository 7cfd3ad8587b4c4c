// A DanceMoE node's chat page. Plain JavaScript, no build step, no library.
// It sends the conversation to this node's /v1/chat/completions, which
// applies the model's own chat format (ChatML, Mistral [INST], ...), reads
// the answer as it streams (server-sent events), and shows what the answer
// cost: tokens per second, the share of its experts computed on this node,
// and remote calls (the stream's last chunk, asked for with
// stream_options.include_stats). Stop aborts the request, which cancels the
// generation on the node; Regenerate asks again for the last answer.
// Everything from the network goes into the page as text, never as HTML.
'use strict';

const state = {
  key: sessionStorage.getItem('dancemoe-api-key') || '',
  messages: [], // {role, content, stats, finish, element}
  node: null, // GET /v1/stats
  controller: null, // AbortController of the answer being streamed
};

class AuthError extends Error {}

function $(id) { return document.getElementById(id); }

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (state.key) h.Authorization = 'Bearer ' + state.key;
  return h;
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function showError(text) {
  $('error').textContent = text || '';
  $('error').classList.toggle('hidden', !text);
}

async function loadNode() {
  const res = await fetch('/v1/stats', { headers: headers(), cache: 'no-store' });
  if (res.status === 401) throw new AuthError();
  if (!res.ok) throw new Error('GET /v1/stats: HTTP ' + res.status);
  state.node = await res.json();
  const n = state.node;
  const facts = [
    ['node', n.node_id || '(standalone)'],
    ['model', n.model.name],
    ['chat format', n.model.chat_format || 'none (base model)'],
    ['placement', 'v' + n.placement_version],
    ['experts here', n.experts.local],
  ];
  $('facts').replaceChildren(...facts.map(([k, v]) => {
    const span = el('span', '', k + ' ');
    span.append(el('b', '', String(v)));
    return span;
  }));
  $('node-state').textContent = n.mode === 'attached'
    ? (n.scheduler && n.scheduler.attached ? 'attached to the scheduler' : 'scheduler unreachable')
    : 'standalone';
  $('format-hint').textContent = n.model.chat_format
    ? 'The node formats the conversation with the model\'s ' + n.model.chat_format +
      ' template; context: ' + n.model.context_tokens + ' tokens.'
    : 'This model has no chat format: each prompt is sent as a plain completion.';
  $('key-form').classList.add('hidden');
}

// ---- the conversation ------------------------------------------------------

function render(message) {
  if (!message.element) {
    message.element = el('div', 'message ' + message.role);
    message.element.append(el('div', 'text'));
    $('messages').append(message.element);
    const empty = $('messages').querySelector('.empty-chat');
    if (empty) empty.remove();
  }
  const e = message.element;
  e.querySelector('.text').textContent = message.content;
  e.dataset.state = message.state || 'done';
  e.classList.toggle('error', message.state === 'error');
  let stats = e.querySelector('.stats');
  if (message.role === 'assistant' && (message.stats || message.finish)) {
    if (!stats) { stats = el('div', 'stats'); e.append(stats); }
    stats.replaceChildren(...statsParts(message));
  }
  let note = e.querySelector('.note');
  if (message.note) {
    if (!note) { note = el('div', 'note'); e.append(note); }
    note.textContent = message.note;
  } else if (note) {
    note.remove();
  }
  e.scrollIntoView({ block: 'end' });
}

function statsParts(m) {
  const parts = [];
  const add = (value, label) => {
    if (parts.length) parts.push(' \u00b7 ');
    parts.push(el('b', '', value), ' ' + label);
  };
  const s = m.stats;
  if (s) {
    add(String(s.completion_tokens), 'tokens');
    add(s.decode_tokens_per_s.toFixed(1), 'tokens/s');
    add(s.local_share === null ? '-' : (100 * s.local_share).toFixed(0) + ' %',
      'of experts computed here');
    add(String(s.remote_calls), 'remote calls' + (s.remote_failures ? ' (' +
      s.remote_failures + ' failed)' : ''));
    if (s.activations.offloaded) add(String(s.activations.offloaded), 'from the offload cache');
  }
  if (m.finish) {
    add(m.finish === 'length' ? 'max tokens' : m.finish === 'stop' ? 'end of answer' : m.finish,
      'reached');
  }
  return parts.map((p) => (p instanceof Node ? p : document.createTextNode(p)));
}

function setBusy(busy) {
  $('send').disabled = busy;
  $('stop').disabled = !busy;
  const last = state.messages[state.messages.length - 1];
  $('regenerate').disabled = busy || !last || last.role !== 'assistant';
}

function requestBody() {
  const maxTokens = parseInt($('max-tokens').value, 10) || 128;
  const temperature = Math.min(2, Math.max(0, parseFloat($('temperature').value) || 0));
  const history = state.messages.filter((m) => m.state !== 'error' && m.content !== '' &&
    m.state !== 'streaming');
  const common = { max_tokens: maxTokens, temperature, stream: true,
    stream_options: { include_usage: true, include_stats: true } };
  if (state.node && !state.node.model.chat_format) {
    const last = history.filter((m) => m.role === 'user').pop();
    return ['/v1/completions', Object.assign({ prompt: last ? last.content : '' }, common)];
  }
  const messages = [];
  const system = $('system').value.trim();
  if (system) messages.push({ role: 'system', content: system });
  for (const m of history) messages.push({ role: m.role, content: m.content });
  return ['/v1/chat/completions', Object.assign({ messages }, common)];
}

// Reads server-sent events ("data: JSON\n\n", "data: [DONE]") from a fetch body.
async function readEvents(body, onEvent) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        onEvent(JSON.parse(data));
      }
    }
  }
}

async function answer() {
  const [path, body] = requestBody();
  const reply = { role: 'assistant', content: '', state: 'streaming', chunks: 0 };
  state.messages.push(reply);
  render(reply);
  state.controller = new AbortController();
  setBusy(true);
  try {
    const res = await fetch(path, { method: 'POST', headers: headers(), body: JSON.stringify(body),
      signal: state.controller.signal });
    if (res.status === 401) throw new AuthError();
    if (!res.ok) {
      const err = await res.json().catch(() => null);
      throw new Error((err && err.error && err.error.message) || 'HTTP ' + res.status);
    }
    await readEvents(res.body, (chunk) => {
      if (chunk.error) throw new Error(chunk.error.message);
      for (const choice of chunk.choices || []) {
        const text = choice.delta ? choice.delta.content : choice.text;
        if (text) reply.content += text;
        if (choice.finish_reason) reply.finish = choice.finish_reason;
      }
      if (chunk.dancemoe) reply.stats = chunk.dancemoe;
      reply.chunks += 1;
      reply.element.dataset.chunks = String(reply.chunks);
      render(reply);
    });
    reply.state = 'done';
  } catch (e) {
    if (e.name === 'AbortError') {
      reply.state = 'stopped';
      reply.note = 'stopped';
    } else if (e instanceof AuthError) {
      reply.state = 'error';
      reply.note = 'this node needs its API key';
      $('key-form').classList.remove('hidden');
    } else {
      reply.state = 'error';
      reply.note = e.message;
    }
  }
  state.controller = null;
  render(reply);
  setBusy(false);
  loadNode().catch(() => {}); // placement version, experts here
}

function send(event) {
  event.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || state.controller) return;
  $('prompt').value = '';
  const m = { role: 'user', content: text };
  state.messages.push(m);
  render(m);
  answer();
}

function regenerate() {
  const last = state.messages[state.messages.length - 1];
  if (state.controller || !last || last.role !== 'assistant') return;
  state.messages.pop();
  last.element.remove();
  answer();
}

function clear() {
  if (state.controller) state.controller.abort();
  state.messages = [];
  $('messages').replaceChildren(el('div', 'empty-chat', 'Start a conversation below.'));
  setBusy(false);
}

document.addEventListener('DOMContentLoaded', () => {
  $('composer').addEventListener('submit', send);
  $('prompt').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) send(event);
  });
  $('stop').addEventListener('click', () => { if (state.controller) state.controller.abort(); });
  $('regenerate').addEventListener('click', regenerate);
  $('clear').addEventListener('click', clear);
  $('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    state.key = $('key').value.trim();
    sessionStorage.setItem('dancemoe-api-key', state.key);
    loadNode().then(() => showError('')).catch((e) => showError(e instanceof AuthError
      ? 'The key was refused.' : e.message));
  });
  clear();
  loadNode().catch((e) => {
    if (e instanceof AuthError) $('key-form').classList.remove('hidden');
    else showError('Cannot reach this node: ' + e.message);
  });
});
