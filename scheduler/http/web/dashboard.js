// The DanceMoE scheduler's dashboard. Plain JavaScript, no build step, no
// library: it polls the scheduler's JSON API (scheduler/http/http_endpoint.h)
// and draws what it answers -- nodes, the layer x expert placement heatmap,
// hit ratios, peer latency and bytes moved over time, decisions and
// migrations. Everything from the network goes into the page as text
// (textContent, SVG attributes), never as HTML.
'use strict';

const FAST_MS = 2000; // status, nodes, migrations and decisions
const SLOW_MS = 6000; // placement, heat and history
// Node colours stay clear of the heat scale's oranges and reds.
const NODE_COLORS = ['#2f6fde', '#9c36b5', '#2b8a3e', '#0b7285', '#c2255c', '#5c940d',
  '#364fc7', '#862e9c', '#087f5b', '#a61e4d', '#1864ab', '#5f3dc4'];
const WINDOWS = [['1 min', 60], ['5 min', 300], ['15 min', 900], ['1 h', 3600], ['6 h', 21600], ['24 h', 86400],
  ['7 d', 604800]];
// Decisions whose gate is bypassed (DESIGN.md 5.5): adopted whatever the costs.
const GATE_BYPASSED = ['cold_start', 'coverage_repair', 'operator'];
const SVG_NS = 'http://www.w3.org/2000/svg';

const state = {
  token: sessionStorage.getItem('dancemoe-http-token') || '',
  view: 'all', // heatmap: 'all' or a node id
  windowS: 0, // 0 until the first status: then the smallest window covering the uptime
  status: null,
  nodes: null,
  placement: null,
  heat: null,
  series: null,
  migrations: null,
  lastSlow: 0,
  refreshes: 0,
  // An operator action was refused for want of a token: the token form stays
  // up until one is entered, though the anonymous reads keep succeeding.
  tokenWanted: false,
};

// ---- helpers ---------------------------------------------------------------

class AuthError extends Error {}

// GET path, or POST `post` (an object) to it. 401: AuthError (no, wrong or
// unknown key token); any other failure: Error with the server's message.
async function api(path, post) {
  const headers = {};
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  const init = { headers, cache: 'no-store' };
  if (post !== undefined) {
    Object.assign(init, { method: 'POST', body: JSON.stringify(post) });
    headers['Content-Type'] = 'application/json';
  }
  const res = await fetch(path, init);
  const body = await res.json().catch(() => null);
  const message = (body && body.error && body.error.message) || 'HTTP ' + res.status;
  if (res.status === 401) throw new AuthError(message);
  if (!res.ok) {
    const err = new Error(message);
    err.status = res.status;
    throw err;
  }
  return body;
}

// A key token handed over in the address (dancemoe keys http-token --url):
// kept for this tab, then taken out of the address bar and the history.
function takeTokenFromAddress() {
  const m = location.hash.match(/token=([^&]+)/);
  if (!m) return;
  state.token = decodeURIComponent(m[1]);
  sessionStorage.setItem('dancemoe-http-token', state.token);
  history.replaceState(null, '', location.pathname + location.search);
}

// POST /api/round: needs an operator's key token (http_access.h).
async function runRound() {
  const button = document.getElementById('round');
  const out = document.getElementById('round-result');
  button.disabled = true;
  out.textContent = 'running a round...';
  try {
    const d = await api('/api/round', {});
    await refresh(true);
    out.textContent = 'round ' + d.id + ': ' + d.outcome + (d.message ? ' (' + d.message + ')' : '');
  } catch (e) {
    out.textContent = 'refused: ' + e.message;
    if (e instanceof AuthError || e.status === 403) {
      state.tokenWanted = true;
      document.getElementById('token-form').classList.remove('hidden');
    }
  } finally {
    button.disabled = false;
  }
}

// el('td', {class: 'num'}, 'text' | Node | [children])
function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  append(node, children);
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function append(node, children) {
  if (children === undefined || children === null) return;
  for (const c of Array.isArray(children) ? children : [children]) {
    node.append(c instanceof Node ? c : String(c));
  }
}

function bytes(n) {
  if (n === null || n === undefined) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Number(n);
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
  return (u === 0 ? v.toFixed(0) : v.toFixed(v < 10 ? 1 : 0)) + ' ' + units[u];
}

function percent(r) {
  return r === null || r === undefined ? '-' : (100 * r).toFixed(1) + ' %';
}

function seconds(s) {
  if (s === null || s === undefined) return '-';
  if (Math.abs(s) >= 100) return s.toFixed(0) + ' s';
  if (Math.abs(s) >= 1) return s.toFixed(2) + ' s';
  return (s * 1000).toFixed(1) + ' ms';
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}

function duration(s) {
  if (s < 120) return s.toFixed(0) + ' s';
  if (s < 7200) return (s / 60).toFixed(0) + ' min';
  if (s < 172800) return (s / 3600).toFixed(1) + ' h';
  return (s / 86400).toFixed(1) + ' d';
}

function nodeIds() {
  const list = state.status ? state.status.nodes.list.map((n) => n.id) : [];
  return list.sort();
}

function colorOf(id) {
  const i = nodeIds().indexOf(id);
  return NODE_COLORS[(i < 0 ? 0 : i) % NODE_COLORS.length];
}

function swatch(color, label) {
  const s = el('span', { class: 'swatch' });
  s.style.background = color;
  return el('span', {}, [s, label]);
}

function fillBody(table, rows) {
  const body = table.querySelector('tbody');
  body.replaceChildren(...rows);
}

// ---- header, nodes ---------------------------------------------------------

function renderFacts() {
  const s = state.status;
  const facts = document.getElementById('facts');
  const p = s.placement;
  const items = [
    ['cluster', s.scheduler.cluster_id],
    ['model', s.model.id.slice(0, 12) + ' (' + s.model.moe_layers + ' MoE layers x ' +
      s.model.experts_per_layer + ' experts, top-' + s.model.top_k + ')'],
    ['placement', p ? 'v' + p.version + ' ' + p.policy + ' (' + p.trigger + ')' : 'none yet'],
    ['nodes', s.nodes.up + ' up' + (s.nodes.down ? ', ' + s.nodes.down + ' down' : '')],
    ['up', duration(s.scheduler.uptime_s)],
    ['database', bytes(s.scheduler.db_bytes)],
  ];
  facts.replaceChildren(...items.map(([k, v]) => el('span', {}, [k + ' ', el('b', {}, v)])));
}

function deviceLine(d) {
  const share = d.budget_bytes > 0 ? Math.min(1, d.bytes_used / d.budget_bytes) : 0;
  const fill = el('span');
  fill.style.width = (100 * share).toFixed(1) + '%';
  return el('div', { class: 'device' }, [
    el('span', { class: 'mono' }, d.name + (d.kind && d.kind !== d.name ? ' (' + d.kind + ')' : '')),
    el('span', { class: 'bar' }, fill),
    el('span', { class: 'muted' }, d.experts + ' experts, ' + bytes(d.bytes_used) + ' / ' +
      bytes(d.budget_bytes)),
  ]);
}

function renderNodes() {
  const detail = new Map((state.nodes ? state.nodes.nodes : []).map((n) => [n.id, n]));
  const rows = state.status.nodes.list.map((n) => {
    const d = detail.get(n.id) || {};
    const name = el('td', {}, [swatch(colorOf(n.id), ''), el('b', {}, n.id)]);
    return el('tr', { 'data-node': n.id }, [
      name,
      el('td', {}, el('span', { class: 'badge ' + n.state }, n.state)),
      el('td', {}, n.devices.map(deviceLine)),
      el('td', { class: 'num' }, bytes(d.host_memory_bytes)),
      el('td', { class: 'num' }, d.experts_held !== undefined ? d.experts_held : '-'),
      el('td', { class: 'num' }, percent(n.local_hit_ratio_since_adoption)),
      el('td', { class: 'num' }, percent(n.local_hit_ratio_last_window)),
      el('td', { class: 'num' }, n.tokens_since_adoption),
      el('td', { class: 'num' }, n.placement_version),
    ]);
  });
  if (rows.length === 0) {
    rows.push(el('tr', {}, el('td', { colspan: 9, class: 'muted' }, 'no node has registered yet')));
  }
  fillBody(document.getElementById('nodes'), rows);
}

// ---- heatmap ---------------------------------------------------------------

// 0 -> pale, 1 -> dark red, through orange.
function heatColor(t) {
  const stops = [[243, 245, 249], [255, 200, 120], [240, 120, 20], [156, 28, 28]];
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  const i = Math.min(Math.floor(x), stops.length - 2);
  const f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f));
  return 'rgb(' + c.join(',') + ')';
}

function heatGrid() {
  if (!state.heat) return null;
  if (state.view === 'all') return state.heat.total;
  const node = state.heat.nodes.find((n) => n.id === state.view);
  return node ? node.counts : null;
}

function renderHeatView() {
  const bar = document.getElementById('heat-view');
  const views = ['all'].concat(nodeIds());
  if (!views.includes(state.view)) state.view = 'all';
  bar.replaceChildren(...views.map((v) => {
    const b = el('button', { type: 'button', 'data-view': v, class: v === state.view ? 'on' : '' },
      v === 'all' ? 'all nodes' : 'node ' + v);
    b.addEventListener('click', () => { state.view = v; renderHeatView(); renderHeatmap(); });
    return b;
  }));
}

const heatLayout = { left: 46, top: 18, cell: 16, layers: [], experts: 0 };

function renderHeatmap() {
  const canvas = document.getElementById('heatmap');
  const ctx = canvas.getContext('2d');
  const placement = state.placement;
  const hint = document.getElementById('heat-hint');
  if (!placement) {
    canvas.width = 600;
    canvas.height = 40;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = '#687086';
    ctx.font = '13px sans-serif';
    ctx.fillText('No placement has been committed yet.', 8, 24);
    canvas.dataset.cells = '0';
    hint.textContent = '';
    return;
  }
  const layers = placement.layers;
  const nExperts = placement.experts_per_layer;
  const width = canvas.parentElement.clientWidth || 900;
  const cell = Math.max(6, Math.min(40, Math.floor((width - 56) / Math.max(nExperts, 1))));
  Object.assign(heatLayout, { cell, layers, experts: nExperts });
  canvas.width = heatLayout.left + cell * nExperts + 4;
  canvas.height = heatLayout.top + cell * layers.length + 4;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const grid = heatGrid();
  let max = 0;
  if (grid) for (const row of grid) for (const v of row) max = Math.max(max, v);
  let held = 0;
  let hot = 0;
  ctx.font = '10px sans-serif';
  ctx.fillStyle = '#687086';
  const labelEvery = Math.ceil(24 / cell);
  for (let e = 0; e < nExperts; e += labelEvery) {
    ctx.fillText(String(e), heatLayout.left + e * cell + 1, heatLayout.top - 5);
  }
  layers.forEach((layer, li) => {
    const y = heatLayout.top + li * cell;
    ctx.fillStyle = '#687086';
    ctx.fillText('L' + layer.layer, 4, y + cell / 2 + 3);
    for (let e = 0; e < nExperts; e += 1) {
      const x = heatLayout.left + e * cell;
      const count = grid && grid[li] ? grid[li][e] : 0;
      if (count > 0) hot += 1;
      ctx.fillStyle = heatColor(max > 0 ? Math.sqrt(count / max) : 0);
      ctx.fillRect(x, y, cell - 1, cell - 1);
      const holders = layer.holders[e] || [];
      if (holders.length === 0) {
        ctx.strokeStyle = '#c53030';
        ctx.strokeRect(x + 0.5, y + 0.5, cell - 2, cell - 2);
      } else if (state.view === 'all') {
        // One strip per holder along the bottom of the cell, in its colour.
        const h = Math.max(2, Math.round(cell * 0.3));
        const w = (cell - 1) / holders.length;
        holders.forEach((id, k) => {
          ctx.fillStyle = colorOf(id);
          ctx.fillRect(x + k * w, y + cell - 1 - h, Math.max(w - 0.5, 1), h);
          held += 1;
        });
      } else if (holders.includes(state.view)) {
        ctx.strokeStyle = colorOf(state.view);
        ctx.lineWidth = 2;
        ctx.strokeRect(x + 1, y + 1, cell - 3, cell - 3);
        ctx.lineWidth = 1;
        held += 1;
      }
    }
  });
  canvas.dataset.cells = String(layers.length * nExperts);
  canvas.dataset.held = String(held);
  canvas.dataset.hot = String(hot);
  const since = state.heat ? 'since v' + (state.heat.version || '-') + ' was committed (' +
    clock(state.heat.since_ms) + ')' : '';
  hint.textContent = state.view === 'all'
    ? 'Rows: MoE layers; columns: experts. Colour: activations of all nodes ' + since +
      '; strips at the bottom of a cell: the nodes holding that expert.'
    : 'Colour: activations of node ' + state.view + ' ' + since +
      '; outlined: experts node ' + state.view + ' holds.';
  const legend = document.getElementById('heat-legend');
  const scale = el('span', {}, ['cold ']);
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    const s = el('span', { class: 'swatch' });
    s.style.background = heatColor(t);
    scale.append(s);
  }
  scale.append(' hot (max ' + max + ')');
  legend.replaceChildren(scale, ...nodeIds().map((id) => swatch(colorOf(id), 'node ' + id)));
}

function heatTooltip(event) {
  const tip = document.getElementById('heat-tip');
  const { left, top, cell, layers, experts } = heatLayout;
  const rect = event.target.getBoundingClientRect();
  const x = event.clientX - rect.left;
  const y = event.clientY - rect.top;
  const e = Math.floor((x - left) / cell);
  const li = Math.floor((y - top) / cell);
  if (!state.placement || e < 0 || e >= experts || li < 0 || li >= layers.length) {
    tip.classList.add('hidden');
    return;
  }
  const lines = ['layer ' + layers[li].layer + ', expert ' + e,
    'held by: ' + ((layers[li].holders[e] || []).join(', ') || 'nobody')];
  if (state.heat) {
    for (const n of state.heat.nodes) {
      if (n.counts[li][e] > 0) lines.push('node ' + n.id + ': ' + n.counts[li][e] + ' activations');
    }
  }
  tip.textContent = lines.join('\n');
  tip.style.left = (x + 14) + 'px';
  tip.style.top = (y + 10) + 'px';
  tip.classList.remove('hidden');
}

// ---- charts ----------------------------------------------------------------

const CHART = { w: 600, h: 220, left: 52, right: 10, top: 10, bottom: 24 };

// series: [{name, color, values: [number|null]}]; xs: bucket start times (ms).
function lineChart(id, xs, series, opts) {
  const root = document.getElementById(id);
  root.replaceChildren();
  const { w, h, left, right, top, bottom } = CHART;
  const plotW = w - left - right;
  const plotH = h - top - bottom;
  let yMax = opts.yMax;
  if (yMax === undefined) {
    yMax = 0;
    for (const s of series) for (const v of s.values) if (v !== null) yMax = Math.max(yMax, v);
    yMax = yMax > 0 ? yMax * 1.1 : 1;
  }
  const xOf = (i) => left + (xs.length > 1 ? (i / (xs.length - 1)) * plotW : plotW / 2);
  const yOf = (v) => top + plotH - (v / yMax) * plotH;
  for (let k = 0; k <= 4; k += 1) {
    const v = (yMax * k) / 4;
    root.append(svg('line', { class: 'axis', x1: left, x2: w - right, y1: yOf(v), y2: yOf(v) }));
    root.append(svg('text', { class: 'tick', x: left - 4, y: yOf(v) + 3, 'text-anchor': 'end' },
      opts.format(v)));
  }
  for (let k = 0; k < 5 && xs.length > 1; k += 1) {
    const i = Math.round((k / 4) * (xs.length - 1));
    root.append(svg('text', { class: 'tick', x: xOf(i), y: h - 6, 'text-anchor': 'middle' },
      clock(xs[i])));
  }
  const t0 = xs[0];
  const step = xs.length > 1 ? xs[1] - xs[0] : 1;
  for (const m of opts.markers || []) {
    const x = xOf((m.at - t0) / step);
    root.append(svg('line', { class: 'version', x1: x, x2: x, y1: top, y2: top + plotH }));
    root.append(svg('text', { class: 'version-label', x: x + 3, y: top + 10 }, m.label));
  }
  let drawn = 0;
  for (const s of series) {
    if (opts.bars) continue;
    let points = [];
    const flush = () => {
      if (points.length === 1) {
        const [x, y] = points[0].split(',');
        root.append(svg('circle', { cx: x, cy: y, r: 2.5, fill: s.color, 'data-series': s.name }));
      } else if (points.length > 1) {
        root.append(svg('polyline', { points: points.join(' '), stroke: s.color,
          'data-series': s.name }));
      }
      points = [];
    };
    s.values.forEach((v, i) => {
      if (v === null) { flush(); return; }
      points.push(xOf(i).toFixed(1) + ',' + yOf(v).toFixed(1));
      drawn += 1;
    });
    flush();
  }
  if (opts.bars) {
    const bw = Math.max(1, plotW / Math.max(xs.length, 1) - 1);
    xs.forEach((_, i) => {
      let base = 0;
      for (const s of series) {
        const v = s.values[i] || 0;
        if (v <= 0) continue;
        drawn += 1;
        root.append(svg('rect', { x: xOf(i) - bw / 2, y: yOf(base + v), width: bw,
          height: yOf(base) - yOf(base + v), fill: s.color, 'data-series': s.name }));
        base += v;
      }
    });
  }
  if (drawn === 0) {
    root.append(svg('text', { class: 'empty', x: left + plotW / 2, y: top + plotH / 2,
      'text-anchor': 'middle' }, 'no reports in this window yet'));
  }
  root.dataset.points = String(drawn);
}

function legend(id, items) {
  document.getElementById(id).replaceChildren(...items.map(([c, t]) => swatch(c, t)));
}

function renderWindows() {
  const bar = document.getElementById('window');
  bar.replaceChildren(...WINDOWS.map(([label, s]) => {
    const b = el('button', { type: 'button', class: s === state.windowS ? 'on' : '' }, label);
    b.addEventListener('click', () => {
      state.windowS = s;
      renderWindows();
      refresh(true);
    });
    return b;
  }));
}

function renderCharts() {
  const s = state.series;
  const xs = Array.from({ length: s.points }, (_, i) => s.from_ms + i * s.step_ms);
  const markers = s.placements.map((p) => ({ at: p.committed_ms, label: 'v' + p.version }));
  lineChart('ratio-chart', xs,
    s.nodes.map((n) => ({ name: n.id, color: colorOf(n.id), values: n.local_hit_ratio })),
    { yMax: 1, format: (v) => (100 * v).toFixed(0) + '%', markers });
  legend('ratio-legend', s.nodes.map((n) => [colorOf(n.id), 'node ' + n.id]));
  lineChart('latency-chart', xs,
    s.peers.map((p) => ({ name: p.id, color: colorOf(p.id),
      values: p.mean_latency_us.map((v) => (v === null ? null : v / 1000)) })),
    { format: (v) => (v >= 10 ? v.toFixed(0) : v.toPrecision(2)) + ' ms', markers });
  legend('latency-legend', s.peers.map((p) => [colorOf(p.id), 'calls to ' + p.id]));
  lineChart('bytes-chart', xs, [
    { name: 'remote', color: '#2f6fde', values: s.bytes_moved.remote_call_bytes },
    { name: 'migration', color: '#e8590c', values: s.bytes_moved.migration_bytes },
  ], { format: bytes, markers, bars: true });
  legend('bytes-legend', [['#2f6fde', 'expert calls (per ' + duration(s.step_ms / 1000) + ')'],
    ['#e8590c', 'migrations']]);
}

// ---- decisions and migrations ---------------------------------------------

function renderDecisions() {
  const rows = (state.migrations ? state.migrations.decisions : []).map((d) => {
    const beats = d.cost_new_s + d.migration_s < d.cost_current_s;
    let gate = seconds(d.cost_new_s) + ' + ' + seconds(d.migration_s) + (beats ? ' < ' : ' >= ') +
      seconds(d.cost_current_s);
    if (d.outcome === 'error' || d.outcome === 'skipped') gate = '-';
    else if (GATE_BYPASSED.includes(d.trigger)) gate = 'bypassed (' + d.trigger + ')';
    return el('tr', {}, [
      el('td', {}, clock(d.time_ms)),
      el('td', {}, d.trigger),
      el('td', {}, d.policy),
      el('td', {}, el('span', { class: 'badge ' + d.outcome }, d.outcome)),
      el('td', { class: 'num' }, seconds(d.cost_current_s)),
      el('td', { class: 'num' }, seconds(d.cost_new_s)),
      el('td', { class: 'num' }, seconds(d.migration_s)),
      el('td', { class: beats ? 'gate-yes' : 'gate-no' }, gate),
      el('td', { class: 'num' }, percent(d.local_hit_ratio_current) + ' -> ' +
        percent(d.local_hit_ratio_new)),
      el('td', { class: 'num' }, bytes(d.migration_bytes)),
      el('td', { class: 'muted' }, d.message || (d.version ? 'started v' + d.version : '')),
    ]);
  });
  if (rows.length === 0) {
    rows.push(el('tr', {}, el('td', { colspan: 11, class: 'muted' }, 'no placement round yet')));
  }
  fillBody(document.getElementById('decisions'), rows);
}

function progressBar(share, label) {
  const fill = el('span');
  fill.style.width = (100 * Math.max(0, Math.min(1, share))).toFixed(1) + '%';
  return el('div', {}, [el('div', { class: 'bar', role: 'progressbar',
    'aria-valuenow': (100 * share).toFixed(0) }, fill), el('div', { class: 'muted' }, label)]);
}

function renderMigrations() {
  const now = document.getElementById('migration-now');
  const m = state.status.migration;
  if (!m) {
    now.replaceChildren(el('p', { class: 'muted' }, 'No migration in progress.'));
  } else {
    const parts = m.participants || [];
    const total = parts.reduce((a, p) => a + p.load_bytes, 0);
    const ready = parts.reduce((a, p) => a + (p.ready ? p.load_bytes : 0), 0);
    const share = total > 0 ? ready / total : m.progress;
    const rows = parts.map((p) => el('div', { class: 'device' }, [
      el('b', {}, p.id), el('span', { class: 'badge ' + (p.ready ? 'committed' : 'preparing') },
        p.ready ? 'ready' : 'loading'),
      el('span', { class: 'muted' }, '+' + p.added + ' / -' + p.removed + ' experts, ' +
        bytes(p.load_bytes))]));
    now.replaceChildren(el('div', { class: 'migration-now', 'data-version': m.version }, [
      el('b', {}, 'v' + m.from_version + ' -> v' + m.version + ' (' + m.trigger + ')'),
      progressBar(share, bytes(ready) + ' of ' + bytes(total) + ' loaded and ready; ' +
        m.elapsed_s.toFixed(0) + ' s of ' + m.timeout_s.toFixed(0) + ' s allowed'),
      progressBar(Math.min(1, m.elapsed_s / m.timeout_s), 'time used before the deadline'),
      ...rows]));
  }
  const rows = (state.migrations ? state.migrations.migrations : []).map((r) => el('tr', {}, [
    el('td', {}, 'v' + r.from_version + ' -> v' + r.to_version),
    el('td', {}, r.trigger),
    el('td', {}, clock(r.started_ms)),
    el('td', { class: 'num' }, bytes(r.bytes)),
    el('td', { class: 'num' }, r.duration_s === null ? '-' : seconds(r.duration_s)),
    el('td', {}, [el('span', { class: 'badge ' + r.outcome }, r.outcome),
      r.reason ? el('span', { class: 'muted' }, ' ' + r.reason) : '']),
  ]));
  if (rows.length === 0) {
    rows.push(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'no migration yet')));
  }
  fillBody(document.getElementById('migrations'), rows);
}

// ---- refresh loop -----------------------------------------------------------

function showError(text) {
  const banner = document.getElementById('error');
  banner.textContent = text || '';
  banner.classList.toggle('hidden', !text);
}

async function refresh(slow) {
  if (slow && !state.windowS) {
    // The smallest window that covers the scheduler's life so far.
    const status = await api('/api/status').catch(() => null);
    const up = status ? status.scheduler.uptime_s : 3600;
    const fit = WINDOWS.find(([, s]) => s >= up) || WINDOWS[WINDOWS.length - 1];
    state.windowS = fit[1];
    renderWindows();
  }
  const fast = [api('/api/status'), api('/api/nodes'), api('/api/migrations?limit=12')];
  const more = slow ? [
    api('/api/placement').catch((e) => { if (e.status === 404) return null; throw e; }),
    api('/api/heat'),
    api('/api/series?window_s=' + state.windowS + '&points=120'),
  ] : [];
  try {
    const [status, nodes, migrations, placement, heat, series] =
      await Promise.all(fast.concat(more));
    Object.assign(state, { status, nodes, migrations });
    if (slow) Object.assign(state, { placement, heat, series, lastSlow: Date.now() });
    if (!state.tokenWanted) document.getElementById('token-form').classList.add('hidden');
    renderFacts();
    renderNodes();
    renderDecisions();
    renderMigrations();
    if (slow) {
      renderHeatView();
      renderHeatmap();
      renderCharts();
    }
    showError('');
    state.refreshes += 1;
    document.body.dataset.refreshes = String(state.refreshes);
    document.getElementById('live').textContent = 'live, updated ' + clock(Date.now());
  } catch (e) {
    if (e instanceof AuthError) {
      document.getElementById('token-form').classList.remove('hidden');
      showError(state.token ? 'The token was refused: ' + e.message : '');
    } else {
      showError('Cannot reach the scheduler: ' + e.message);
    }
    document.getElementById('live').textContent = 'not updated since ' +
      (state.refreshes ? clock(state.lastSlow) : 'start');
  }
}

async function loop() {
  await refresh(Date.now() - state.lastSlow >= SLOW_MS);
  setTimeout(loop, FAST_MS);
}

document.addEventListener('DOMContentLoaded', () => {
  takeTokenFromAddress();
  document.getElementById('round').addEventListener('click', runRound);
  document.getElementById('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    state.token = document.getElementById('token').value.trim();
    state.tokenWanted = false;
    sessionStorage.setItem('dancemoe-http-token', state.token);
    refresh(true);
  });
  const canvas = document.getElementById('heatmap');
  canvas.addEventListener('mousemove', heatTooltip);
  canvas.addEventListener('mouseleave', () => document.getElementById('heat-tip').classList.add('hidden'));
  window.addEventListener('resize', () => renderHeatmap());
  renderWindows();
  loop();
});
