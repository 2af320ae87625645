#!/usr/bin/env node
// speedscope-check.mjs: open a Chrome trace (Trace Event Format JSON) in the
// speedscope viewer running in headless Chromium, offline, and report what
// speedscope imported.
//
// usage: node speedscope-check.mjs [options] TRACE.json [EXPECT_NAME ...]
//
// options:
//   --timeout MS        give up after MS milliseconds (default 120000)
//   --strict            also fail on speedscope import warnings that mean the
//                       B/E nesting is broken (unclosed B, E without B, E whose
//                       name differs from the open B)
//   --all-frames        print every frame name speedscope made (with args), not
//                       only a sample
//   --no-frames         skip reading the frame names (no export step)
//   --screenshot FILE   save a PNG of the loaded viewer
//   --chromium PATH     browser binary (default $CHROMIUM or /usr/bin/chromium)
//
// Success: one JSON line on stdout, exit 0.
// Failure: one line "speedscope-check: FAIL: reason" on stderr, exit 1
// (usage errors: exit 2).
//
// How it works: a tiny HTTP server on 127.0.0.1 (random port) serves
// speedscope's built dist/release folder and the trace; Chromium opens
// index.html#profileURL=<trace URL> (speedscope fetches it itself; that hash
// parameter only works over http(s), not file://). Loaded = speedscope's
// toolbar shows its view buttons. Frame names are read from speedscope's own
// "Export" (the speedscope JSON it would download), captured in the page.
// Needs only playwright-core (never downloads a browser) and speedscope.

import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const require = createRequire(import.meta.url);

function usage(msg) {
  if (msg) process.stderr.write(`speedscope-check: ${msg}\n`);
  process.stderr.write(
    'usage: node speedscope-check.mjs [--timeout MS] [--strict] [--all-frames] [--no-frames]\n' +
      '                                 [--screenshot FILE] [--chromium PATH] TRACE.json [EXPECT_NAME ...]\n'
  );
  process.exit(2);
}

function fail(reason) {
  process.stderr.write(`speedscope-check: FAIL: ${String(reason).replace(/\s+/g, ' ').trim()}\n`);
  process.exitCode = 1;
}

// ---- arguments ----
const opts = { timeout: 120000, strict: false, allFrames: false, frames: true, screenshot: null,
  chromium: process.env.CHROMIUM || '/usr/bin/chromium' };
const positional = [];
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    if (a === '--') { positional.push(...argv.slice(i + 1)); break; }
    else if (a === '-h' || a === '--help') usage();
    else if (a === '--timeout') { opts.timeout = Number(next()); if (!(opts.timeout > 0)) usage('bad --timeout'); }
    else if (a === '--strict') opts.strict = true;
    else if (a === '--all-frames') opts.allFrames = true;
    else if (a === '--no-frames') opts.frames = false;
    else if (a === '--screenshot') opts.screenshot = next();
    else if (a === '--chromium') opts.chromium = next();
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else positional.push(a);
  }
}
if (positional.length < 1) usage('no trace file given');
const [tracePath, ...expectNames] = positional;
if (expectNames.length && !opts.frames) usage('EXPECT_NAME needs the frame names: drop --no-frames');

let traceStat;
try { traceStat = fs.statSync(tracePath); } catch (e) { fail(`cannot read ${tracePath}: ${e.code || e.message}`); process.exit(1); }
if (!traceStat.isFile()) { fail(`${tracePath} is not a file`); process.exit(1); }
if (!fs.existsSync(opts.chromium)) { fail(`no browser at ${opts.chromium} (apt-get install chromium)`); process.exit(1); }

let chromium, distDir;
try {
  ({ chromium } = require('playwright-core'));
  distDir = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist', 'release');
  if (!fs.existsSync(path.join(distDir, 'index.html'))) throw new Error(`no index.html in ${distDir}`);
} catch (e) {
  fail(`missing node packages (npm install speedscope playwright-core): ${e.message}`);
  process.exit(1);
}

// ---- local server: speedscope's dist folder + the trace, 127.0.0.1 only ----
const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css',
  '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png', '.ico': 'image/x-icon',
  '.woff2': 'font/woff2', '.txt': 'text/plain; charset=utf-8', '.md': 'text/plain; charset=utf-8' };
const traceUrlName = encodeURIComponent(path.basename(tracePath).endsWith('.json') ? path.basename(tracePath)
  : `${path.basename(tracePath)}.json`); // speedscope picks the importer partly by the name's extension
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  let file;
  if (url.pathname === `/trace/${traceUrlName}`) file = path.resolve(tracePath);
  else {
    const rel = decodeURIComponent(url.pathname === '/' ? '/index.html' : url.pathname);
    file = path.resolve(distDir, '.' + rel);
    if (!file.startsWith(distDir + path.sep)) { res.writeHead(403); res.end(); return; }
  }
  fs.stat(file, (err, st) => {
    if (err || !st.isFile()) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] || 'application/octet-stream',
      'Content-Length': st.size, 'Cache-Control': 'no-store' });
    fs.createReadStream(file).pipe(res);
  });
});

// ---- in-page helpers ----
// Runs before speedscope: capture the Blob that speedscope's Export makes
// (URL.createObjectURL) and stop the <a download> click, so nothing is saved.
// Also count speedscope's importer warnings in the page instead of sending
// each console.warn over the DevTools protocol: a trace with 100k mismatched
// E events makes 100k warnings, which would slow the import being timed.
function initScript() {
  const kinds = [
    [/was still open at end of profile/, 'unclosed_begin'],
    [/but the stack was empty/, 'end_without_begin'],
    [/Tried to end .* Doing nothing instead/, 'end_name_mismatch'],
    [/Tried to end .* Ending .* instead/, 'end_args_mismatch'],
    [/GL Driver Message|WebGL/, null], // software GL noise, not about the trace
  ];
  window.__ssWarn = { counts: {}, samples: [] };
  const warn = console.warn.bind(console);
  console.warn = (...a) => {
    const t = a.map((x) => (typeof x === 'string' ? x : String(x))).join(' ');
    const hit = kinds.find(([re]) => re.test(t));
    const k = hit ? hit[1] : 'other';
    if (!k) return;
    window.__ssWarn.counts[k] = (window.__ssWarn.counts[k] || 0) + 1;
    if (window.__ssWarn.samples.length < 3) window.__ssWarn.samples.push(t.slice(0, 200));
    if (k === 'other') warn(...a);
  };
  const orig = URL.createObjectURL.bind(URL);
  URL.createObjectURL = (obj) => { if (window.__ssCapture && obj instanceof Blob) window.__ssExport = obj; return orig(obj); };
  const click = HTMLAnchorElement.prototype.click;
  HTMLAnchorElement.prototype.click = function () {
    if (window.__ssCapture && this.hasAttribute('download')) return;
    return click.call(this);
  };
}

// Page state as speedscope renders it.
function pageState() {
  const text = document.body ? document.body.innerText : '';
  if (text.includes('Something went wrong')) return 'error';
  // Toolbar view buttons and Export exist only once a profile is shown.
  if (text.includes('Time Order') && text.includes('Sandwich') && text.includes('Export')) return 'loaded';
  if (document.querySelector('input[type=file]#file')) return 'landing';
  return null; // still loading (speedscope shows a bare loading bar)
}

// Summarise speedscope's export (speedscope file format) inside the page, so
// only a small object crosses to node.
async function summariseExport([allFrames, expect]) {
  const blob = window.__ssExport;
  if (!blob) return null;
  const data = JSON.parse(await blob.text());
  const frames = data.shared.frames.map((f) => f.name);
  // speedscope names a trace frame `${name} ${JSON.stringify(args)}` when the
  // event has args; recover the bare event name as well.
  const bare = (n) => {
    for (let i = n.indexOf(' {'); i >= 0; i = n.indexOf(' {', i + 1)) {
      try { JSON.parse(n.slice(i + 1)); return n.slice(0, i); } catch (_) { /* keep looking */ }
    }
    return n;
  };
  const profiles = data.profiles.map((p) => {
    let opened = 0; const used = new Set();
    if (p.type === 'evented') {
      for (const ev of p.events) if (ev.type === 'O') { opened++; used.add(ev.frame); }
    } else if (p.type === 'sampled') {
      for (const s of p.samples) for (const f of s) used.add(f);
      opened = p.samples.length;
    }
    return { name: p.name, type: p.type, unit: p.unit, start: p.startValue, end: p.endValue,
      frames_opened: opened, distinct_frames: used.size,
      names: [...new Set([...used].map((i) => bare(frames[i])))].sort() };
  });
  return {
    profile_count: data.profiles.length,
    profiles,
    frame_count: frames.length,
    frame_names: [...new Set(frames.map(bare))].sort(),
    frames_full: allFrames ? frames : frames.slice(0, 10),
    // an EXPECT_NAME matches a bare event name or a full frame name
    missing: expect.filter((n) => !frames.some((f) => f === n || bare(f) === n)),
  };
}

// ---- main ----
let context, userDataDir, failed = false;
const t0 = performance.now();
try {
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', resolve); });
  const port = server.address().port;
  const base = `http://127.0.0.1:${port}`;

  // A fresh profile each run (--user-data-dir), removed at the end.
  // playwright-core never downloads a browser; it starts opts.chromium.
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'speedscope-check-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: opts.chromium,
    headless: true,
    chromiumSandbox: false,
    acceptDownloads: false,
    viewport: { width: 1280, height: 720 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 60000,
  });
  const page = context.pages()[0] || (await context.newPage());
  await page.addInitScript(initScript);

  const errors = [];    // console errors / page exceptions: fail
  let warnings = {}, warningSamples = []; // speedscope importer warnings by kind (counted in the page)
  let importMs = null, importFailure = null, dialog = null, phase = 'load';
  let rejectEarly;
  const early = new Promise((_, rej) => { rejectEarly = rej; });
  early.catch(() => {});

  page.on('console', (m) => {
    const t = m.text();
    const type = m.type();
    if (type === 'error') { errors.push(`[${phase}] ${t}`); rejectEarly(new Error(`console error during ${phase}: ${t}`)); }
    else if (type === 'timeEnd' || /^import: [\d.]+ ?ms$/.test(t)) {
      const mm = /^import: ([\d.]+)/.exec(t); if (mm) importMs = Number(mm[1]);
    } else if (t.startsWith('Failed to load format')) {
      importFailure = t;
    }
  });
  page.on('pageerror', (e) => { errors.push(`[${phase}] ${e.message}`); rejectEarly(new Error(`page exception during ${phase}: ${e.message}`)); });
  page.on('dialog', async (d) => {
    dialog = d.message();
    await d.dismiss().catch(() => {});
    rejectEarly(new Error(`speedscope said: ${dialog}`));
  });

  const profileURL = `${base}/trace/${traceUrlName}`;
  const tNav = performance.now();
  await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(profileURL)}`, { timeout: opts.timeout });

  // playwright's own timeout fires only when the page answers, and a page busy
  // importing answers late: keep a deadline on the node side too.
  const remaining = Math.max(1, opts.timeout - (performance.now() - t0));
  const deadline = new Promise((_, rej) => setTimeout(() => rej(new Error('Timeout')), remaining).unref());
  deadline.catch(() => {});
  let state;
  try {
    const handle = await Promise.race([
      page.waitForFunction(pageState, null, { polling: 'raf', timeout: remaining }),
      early,
      deadline,
    ]);
    state = await handle.jsonValue();
  } catch (e) {
    if (/Timeout/i.test(e.name) || /^Timeout$|Timeout .* exceeded/.test(e.message)) throw new Error(`speedscope did not finish loading within ${opts.timeout} ms`);
    throw e;
  }
  const loadMs = performance.now() - tNav;
  if (state === 'error') throw new Error(`speedscope shows "Something went wrong"${importFailure ? `: ${importFailure}` : ''}`);
  if (state === 'landing') throw new Error(`nothing loaded (speedscope shows its landing page)${dialog ? `: ${dialog}` : ''}`);
  if (errors.length) throw new Error(`console error: ${errors[0]}`);

  const toolbar = await page.evaluate(() => {
    // The centre of the toolbar shows the current profile's name (and "(i/N)" with several).
    const bars = [...document.querySelectorAll('div')].filter((d) => d.innerText && d.innerText.includes('Time Order') && d.innerText.includes('Export'));
    if (!bars.length) return null;
    const bar = bars[bars.length - 1]; // innermost (document order)
    return [...bar.childNodes].filter((n) => !(n.innerText || '').match(/Time Order|Export/))
      .map((n) => (n.innerText ?? n.textContent ?? '').trim()).filter(Boolean).join(' ');
  });

  if (opts.screenshot) await page.screenshot({ path: opts.screenshot });

  // The profile selector (one entry per pid/tid): with several profiles the
  // toolbar title reads "name (i/N)" and a click on it opens a table of names.
  let domProfileNames = toolbar ? [toolbar] : [];
  const many = toolbar && /\((\d+)\/(\d+)\)$/.exec(toolbar);
  if (many) {
    phase = 'profile selector';
    await page.getByText(`(${many[1]}/${many[2]})`, { exact: true }).click();
    const rows = page.locator('table tr:has(td)');
    await rows.nth(Number(many[2]) - 1).waitFor({ timeout: opts.timeout });
    domProfileNames = await page.evaluate(() => [...document.querySelectorAll('table tr')]
      .filter((r) => r.cells.length >= 3 && r.cells[0].tagName === 'TD').map((r) => r.cells[1].innerText.trim()));
    await page.keyboard.press('Escape');
  }

  let summary = null, exportMs = null;
  if (opts.frames) {
    phase = 'export';
    const tEx = performance.now();
    await page.evaluate(() => { window.__ssCapture = true; window.__ssExport = null; });
    await page.keyboard.press('Control+s'); // speedscope's "Export" shortcut
    const exportDeadline = new Promise((_, rej) => setTimeout(() => rej(new Error(`speedscope export did not finish within ${opts.timeout} ms`)), opts.timeout).unref());
    exportDeadline.catch(() => {});
    await Promise.race([
      page.waitForFunction(() => !!window.__ssExport, null, { polling: 50, timeout: opts.timeout }),
      early,
      exportDeadline,
    ]);
    summary = await page.evaluate(summariseExport, [opts.allFrames, expectNames]);
    exportMs = performance.now() - tEx;
    if (!summary) throw new Error('could not read speedscope export');
  }
  if (errors.length) throw new Error(`console error: ${errors[0]}`);
  ({ counts: warnings, samples: warningSamples } = await page.evaluate(() => window.__ssWarn));

  if (opts.strict) {
    const bad = ['unclosed_begin', 'end_without_begin', 'end_name_mismatch'].filter((k) => warnings[k]);
    if (bad.length) throw new Error(`speedscope import warnings (--strict): ${bad.map((k) => `${k}=${warnings[k]}`).join(', ')}; e.g. ${warningSamples[0] || ''}`);
  }
  if (summary && summary.profile_count === 0) throw new Error('speedscope imported no profile');

  const missing = summary ? summary.missing : [];
  const out = {
    ok: true,
    trace: tracePath,
    trace_bytes: traceStat.size,
    load_ms: Math.round(loadMs),
    speedscope_import_ms: importMs == null ? null : Math.round(importMs),
    export_ms: exportMs == null ? null : Math.round(exportMs),
    toolbar_title: toolbar,
    profile_selector: domProfileNames,
    profiles: summary ? summary.profiles : null,
    frame_count: summary ? summary.frame_count : null,
    frame_names: summary ? summary.frame_names : null,
    [opts.allFrames ? 'frames_full' : 'frames_full_sample']: summary ? summary.frames_full : null,
    warnings,
    warning_samples: warningSamples,
  };
  if (missing.length) {
    process.stdout.write(JSON.stringify({ ...out, ok: false, missing }) + '\n');
    throw new Error(`expected frame name(s) not found: ${missing.join(', ')}`);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
} catch (e) {
  failed = true;
  fail(e && e.message ? e.message.split('\n')[0] : e);
} finally {
  if (context) {
    // A renderer stuck in a long import makes a polite close() wait minutes:
    // after a failure, or if close() hangs, SIGKILL our own browser process
    // (the child of this node process started with our --user-data-dir).
    const closeWithin = (ms) => Promise.race([context.close().then(() => true, () => false),
      new Promise((r) => setTimeout(() => r(false), ms).unref())]);
    if (failed || !(await closeWithin(10000))) {
      killOwnBrowser(userDataDir);
      await closeWithin(5000);
    }
  }
  server.close();
  server.closeAllConnections();
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
}

function killOwnBrowser(dir) {
  let entries = [];
  try { entries = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)); } catch { return; }
  for (const pid of entries) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`--user-data-dir=${dir}`)) continue;
      process.kill(Number(pid), 'SIGKILL');
    } catch { /* process gone */ }
  }
}