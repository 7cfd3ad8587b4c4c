// Loads the scheduler's dashboard and a node's chat page of a running demo
// cluster in headless Chromium (Debian's, driven by the playwright-core npm
// package; no browser is ever downloaded), checks what they render, uses the
// chat (a streamed answer, stop, regenerate), checks that running a round
// from the dashboard needs the operator's key token (refused without it,
// done with the demo's operator address) and saves screenshots. Prints
// one JSON object of findings that browser_test.cpp checks; exits 77 after
// printing "SKIPPED: ..." when Chromium cannot start.
//
// usage: NODE_PATH=tests/fixtures/npm node browser_check.mjs CHROMIUM PROFILE_DIR SHOTS_DIR
//            DASHBOARD_URL CHAT_URL OPERATOR_DASHBOARD_URL
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const [executablePath, profileDir, shotsDir, dashboardUrl, chatUrl, operatorUrl] =
  process.argv.slice(2);
const out = { console_errors: [], foreign_requests: [] };

let context;
try {
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
    timeout: 60_000,
  });
} catch (e) {
  console.log('SKIPPED: Chromium (' + executablePath + ') cannot start: ' +
    String(e.message).split('\n')[0]);
  process.exit(77);
}

function watch(page, origin) {
  page.on('console', (m) => { if (m.type() === 'error') out.console_errors.push(m.text()); });
  page.on('pageerror', (e) => out.console_errors.push(e.message));
  page.on('request', (r) => {
    const url = r.url();
    if (!url.startsWith(origin) && !url.startsWith('data:')) out.foreign_requests.push(url);
  });
}

try {
  // ---- dashboard ----
  const dash = await context.newPage();
  watch(dash, new URL(dashboardUrl).origin);
  await dash.goto(dashboardUrl);
  await dash.waitForFunction(() => Number(document.body.dataset.refreshes || 0) >= 1 &&
    Number(document.getElementById('heatmap').dataset.cells || 0) > 0 &&
    Number(document.getElementById('ratio-chart').dataset.points || 0) > 0, null,
  { timeout: 30_000 });
  out.dashboard = await dash.evaluate(() => {
    // Distinct colours drawn on the heatmap (a blank canvas has one or none).
    const canvas = document.getElementById('heatmap');
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const colours = new Set();
    for (let i = 0; i < pixels.length; i += 16) {
      if (pixels[i + 3] > 0) colours.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
    }
    const rows = [...document.querySelectorAll('#nodes tbody tr[data-node]')];
    const text = (sel) => [...document.querySelectorAll(sel)].map((e) => e.textContent);
    return {
      title: document.title,
      facts: document.getElementById('facts').textContent,
      nodes: rows.map((r) => r.dataset.node),
      node_states: rows.map((r) => r.querySelector('.badge').textContent),
      devices: rows.map((r) => r.querySelectorAll('.device').length),
      heat_cells: Number(canvas.dataset.cells),
      heat_held: Number(canvas.dataset.held),
      heat_hot: Number(canvas.dataset.hot),
      heat_colours: colours.size,
      ratio_points: Number(document.getElementById('ratio-chart').dataset.points),
      ratio_lines: document.querySelectorAll('#ratio-chart [data-series]').length,
      version_marks: text('#ratio-chart .version-label'),
      latency_points: Number(document.getElementById('latency-chart').dataset.points),
      bytes_points: Number(document.getElementById('bytes-chart').dataset.points),
      decisions: text('#decisions tbody tr').map((t) => t.replace(/\s+/g, ' ')),
      migrations: text('#migrations tbody tr').map((t) => t.replace(/\s+/g, ' ')),
      live: document.getElementById('live').textContent,
    };
  });
  // The per-node view outlines what that node holds.
  await dash.click('#heat-view button[data-view="a"]');
  out.dashboard.heat_held_by_a = await dash.evaluate(
    () => Number(document.getElementById('heatmap').dataset.held));
  await dash.click('#heat-view button[data-view="all"]');
  // It refreshes by itself.
  const before = await dash.evaluate(() => Number(document.body.dataset.refreshes));
  await dash.waitForFunction((n) => Number(document.body.dataset.refreshes) > n, before,
    { timeout: 15_000 });
  out.dashboard.refreshed = true;
  await dash.screenshot({ path: shotsDir + '/dashboard.png', fullPage: true });

  // ---- chat ----
  const chat = await context.newPage();
  watch(chat, new URL(chatUrl).origin);
  await chat.goto(chatUrl);
  await chat.waitForFunction(() => document.getElementById('facts').textContent.includes('node'),
    null, { timeout: 15_000 });
  out.chat = { facts: await chat.textContent('#facts') };
  await chat.click('#settings summary'); // open the settings: max tokens
  await chat.fill('#max-tokens', '24');
  await chat.fill('#prompt', 'Which experts answer this question?');
  await chat.press('#prompt', 'Enter');
  await chat.waitForSelector('.message.assistant[data-state="done"]', { timeout: 60_000 });
  const first = chat.locator('.message.assistant').first();
  out.chat.answer = {
    text: await first.locator('.text').textContent(),
    chunks: Number(await first.getAttribute('data-chunks')),
    stats: await first.locator('.stats').textContent(),
  };
  await chat.screenshot({ path: shotsDir + '/chat.png', fullPage: true });

  // Regenerate: the last answer is asked for again, in its place.
  await chat.click('#regenerate');
  await chat.waitForSelector('.message.assistant[data-state="done"]', { timeout: 60_000 });
  out.chat.after_regenerate = await chat.evaluate(() => ({
    messages: document.querySelectorAll('.message').length,
    assistant: document.querySelectorAll('.message.assistant').length,
  }));

  // Stop: a long answer, stopped once it streams. An answer that reached the
  // end of its text before the click is tried again.
  out.chat.stop = [];
  for (let attempt = 0; attempt < 4; attempt += 1) {
    await chat.click('#clear'); // a fresh conversation: the context has room
    await chat.fill('#max-tokens', '2000');
    await chat.fill('#prompt', 'Tell me a very long story, attempt ' + attempt + '.');
    await chat.click('#send');
    await chat.waitForFunction(() => {
      const all = document.querySelectorAll('.message.assistant');
      const m = all[all.length - 1];
      return m && (Number(m.dataset.chunks || 0) >= 3 || m.dataset.state !== 'streaming');
    }, null, { timeout: 60_000 });
    await chat.click('#stop', { timeout: 5_000 }).catch(() => {});
    await chat.waitForFunction(() => {
      const all = document.querySelectorAll('.message.assistant');
      return all[all.length - 1].dataset.state !== 'streaming';
    }, null, { timeout: 30_000 });
    const state = await chat.locator('.message.assistant').last().getAttribute('data-state');
    out.chat.stop.push(state);
    if (state === 'stopped') break;
  }
  out.chat.send_enabled_after_stop = await chat.isEnabled('#send');

  // ---- rights: a round from the dashboard needs an operator's key token ----
  const errorsBefore = out.console_errors.length;
  const rows = (page) => page.evaluate(() => document.querySelectorAll('#decisions tbody tr').length);
  out.rights = { decisions_before: await rows(dash) };
  await dash.click('#round');
  await dash.waitForFunction(
    () => document.getElementById('round-result').textContent.startsWith('refused'), null,
    { timeout: 15_000 });
  out.rights.anonymous = await dash.textContent('#round-result');
  out.rights.token_form_shown = await dash.isVisible('#token-form');
  // The anonymous reads go on succeeding; the form must stay up past them.
  const refreshed = await dash.evaluate(() => Number(document.body.dataset.refreshes || 0));
  await dash.waitForFunction((n) => Number(document.body.dataset.refreshes || 0) > n, refreshed,
    { timeout: 30_000 });
  out.rights.token_form_kept = await dash.isVisible('#token-form');
  const op = await context.newPage();
  watch(op, new URL(operatorUrl).origin);
  await op.goto(operatorUrl);
  await op.waitForFunction(() => Number(document.body.dataset.refreshes || 0) >= 1, null,
    { timeout: 30_000 });
  out.rights.address_after_load = op.url(); // the token is taken out of it
  await op.click('#round');
  await op.waitForFunction(
    () => /^round \d+: /.test(document.getElementById('round-result').textContent), null,
    { timeout: 30_000 });
  out.rights.operator = await op.textContent('#round-result');
  out.rights.decisions_after = await rows(op);
  // The browser logs the refused request (401) as an error: expected here.
  const added = out.console_errors.splice(errorsBefore);
  out.rights.console_errors = added;
  out.console_errors.push(...added.filter((m) => !/status of 401/.test(m)));
} catch (e) {
  out.failure = String(e.stack || e);
}
await context.close();
console.log(JSON.stringify(out));
