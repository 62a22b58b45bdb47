'use strict';
/*
 * The runner: the entry script of a function process (internal/functionrun). It loads
 * ./bundle.js and runs its handler for each request of the supervisor.
 *
 * fd 3, supervisor -> runner, NDJSON:  {"id":"<invocation id>","event":{...},"timeoutMs":3000}
 * fd 4, runner -> supervisor, NDJSON:
 *   {"t":"ready"}                                  the bundle loaded
 *   {"t":"fatal","error":"..."}                    it could not; the process then exits
 *   {"t":"log","id":"<id or ''>","s":"log|info|warn|error|debug|stdout|stderr","m":"...","ts":<ms>}
 *   {"t":"done","id":"...","ok":true,"value":<json>}
 *   {"t":"done","id":"...","ok":false,"error":"...","reason":"timeout"?}
 * The end of fd 3 means the supervisor is gone: the runner exits.
 *
 * The bundle's default export is its handler. A module that declares an agent or tools
 * (defineAgent, defineTool) may have none. An event {"type":"tool","data":{"tool":"<name>",
 * "arguments":{...}}} runs that tool's handler (arguments, ctx); any other event the handler.
 *
 * Describe mode (`node runner.js --describe`, functionrun.Describe): the runner loads the bundle,
 * writes one frame on fd 4 and exits, reading nothing:
 *   {"t":"manifest","hasHandler":<bool>,"agent":<defineAgent's config>?,"tools":[{"name","description","parameters"}]}
 *   {"t":"fatal","error":"..."}                    the bundle could not load
 *
 * Serve mode (`node runner.js --serve <port>`, the kubernetes runtime's pods): the runner reads
 * no pipe. It fetches its bundle, GET $SWITCHBOARD_BUNDLE_URL with `Authorization: Bearer
 * $ZAVU_API_KEY`, refuses to start (exit 1, one line on stderr) unless its sha256 is
 * $SWITCHBOARD_BUNDLE_SHA256, lays it out in $SWITCHBOARD_WORK_DIR (default /tmp/function) as the
 * local runtime does (bundle.js and the runtime module, functions.js beside this file, under
 * node_modules), loads it, and serves HTTP on the port:
 *   GET  /healthz   200 once the bundle loaded, 503 before (and while stopping)
 *   POST /invoke    {"id","event","timeoutMs"} -> 200
 *                   {"ok":true,"value":<json>,"logs":[{"ts":<ms>,"s":"<stream>","m":"..."}]}
 *                   {"ok":false,"reason":"error|timeout","error":"...","logs":[...]}
 *                   a body over 6 MiB -> 413
 * An invocation's lines are kept with the limits the supervisor of the fd mode applies (a line
 * 8 KiB, 256 KiB in all, then one "platform" line; a return value 6 MiB of JSON). Lines no
 * invocation owns go to the real stdout and stderr (the pod's log). SIGTERM stops taking
 * requests and exits once those in flight are answered.
 */

const { AsyncLocalStorage } = require('node:async_hooks');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const { createRequire } = require('node:module');
const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');
const util = require('node:util');

// A log line longer than this (UTF-16 units) is cut here already, so that a frame stays
// well under 64 KiB; the supervisor applies its own, usually smaller, limit.
const MAX_LINE = 16 * 1024;
const MAX_FRAME = 60 * 1024;
const TAG = Symbol.for('switchboard.function');

// Serve mode's limits: the fd mode's supervisor's (functionrun.DefaultMax*).
const SERVE_MAX_LINE_BYTES = 8 * 1024;
const SERVE_MAX_LOG_BYTES = 256 * 1024;
const SERVE_MAX_RESULT_BYTES = 6 * 1024 * 1024;
const SERVE_MAX_BODY_BYTES = 6 * 1024 * 1024;
// The names the runtime module is served under (functionbuild.RuntimeModules).
const RUNTIME_MODULES = ['@zavudev/functions', '@switchboard/functions'];

// The invocation's state (see newState) while its code runs: whose a line is.
const als = new AsyncLocalStorage();

// out is fd 4 in the fd and describe modes (serve mode has no fd 4).
let out = null;

function send(line) {
  out.write(line + '\n');
}

function cut(m) {
  return m.length > MAX_LINE ? m.slice(0, MAX_LINE) + '…' : m;
}

// frameLog writes a log frame on fd 4 (the fd mode).
function frameLog(id, s, m) {
  let line = JSON.stringify({ t: 'log', id, s, m: cut(m), ts: Date.now() });
  if (Buffer.byteLength(line) > MAX_FRAME) {
    // Only escapes (control characters) blow a cut line up this much.
    line = JSON.stringify({ t: 'log', id, s, m: m.slice(0, MAX_LINE / 8) + '…', ts: Date.now() });
  }
  send(line);
}

// The real stdout and stderr writes, before capture() wraps them.
const rawWrite = { stdout: process.stdout.write.bind(process.stdout), stderr: process.stderr.write.bind(process.stderr) };

// processLine takes a line no invocation owns: a frame with no id in the fd mode, the real
// stdout or stderr in serve mode (the pod's log).
let processLine = (s, m) => {
  if (out !== null) {
    frameLog('', s, m);
    return;
  }
  const err = s === 'warn' || s === 'error' || s === 'stderr';
  rawWrite[err ? 'stderr' : 'stdout'](m + '\n');
};

// emit is a line of the invocation running now, or of the process.
function emit(s, m) {
  const st = als.getStore();
  if (st) st.line(s, m);
  else processLine(s, m);
}

for (const s of ['log', 'info', 'warn', 'error', 'debug']) {
  console[s] = (...args) => emit(s, util.format(...args));
}

// Raw writes to stdout/stderr inside an invocation become its lines too (the supervisor
// could only guess whom a write on the real pipes belongs to). Outside one they go through.
function capture(name) {
  const stream = process[name];
  const write = rawWrite[name];
  stream.write = function (chunk, encoding, cb) {
    const st = als.getStore();
    if (!st) return write(chunk, encoding, cb);
    if (typeof encoding === 'function') {
      cb = encoding;
      encoding = undefined;
    }
    let text;
    if (typeof chunk === 'string') {
      text = encoding && encoding !== 'utf8' && encoding !== 'utf-8' ? Buffer.from(chunk, encoding).toString('utf8') : chunk;
    } else {
      text = Buffer.from(chunk).toString('utf8');
    }
    let buf = st[name] + text;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      st.line(name, buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
    if (buf.length > MAX_LINE) {
      st.line(name, buf);
      buf = '';
    }
    st[name] = buf;
    if (typeof cb === 'function') process.nextTick(cb);
    return true;
  };
}
capture('stdout');
capture('stderr');

function flush(st) {
  for (const name of ['stdout', 'stderr']) {
    if (st[name] !== '') st.line(name, st[name]);
    st[name] = '';
  }
}

// newState is an invocation's state: its id, its unterminated raw writes, and line(s, m), where
// its lines go.
function newState(id, line) {
  return { id, stdout: '', stderr: '', line };
}

// cutBytes keeps at most limit bytes of m's UTF-8, whole characters only, and marks a cut with
// "…" (as the supervisor's cutLine).
function cutBytes(m, limit) {
  const b = Buffer.from(m, 'utf8');
  if (b.length <= limit) return m;
  let end = limit;
  while (end > 0 && (b[end] & 0xc0) === 0x80) end--; // b[end] continues a character: drop it whole
  return b.subarray(0, end).toString('utf8') + '…';
}

function formatBytes(n) {
  if (n >= 1 << 20 && n % (1 << 20) === 0) return `${n >> 20} MiB`;
  if (n >= 1 << 10 && n % (1 << 10) === 0) return `${n >> 10} KiB`;
  return `${n} bytes`;
}

// logCollector keeps an invocation's lines in serve mode, within the supervisor's limits.
function logCollector() {
  const lines = [];
  let bytes = 0;
  let truncated = false;
  const add = (s, m) => {
    if (truncated) return;
    const msg = cutBytes(m, SERVE_MAX_LINE_BYTES);
    const n = Buffer.byteLength(msg);
    if (bytes + n > SERVE_MAX_LOG_BYTES) {
      truncated = true;
      lines.push({
        ts: Date.now(),
        s: 'platform',
        m: `[output truncated: more than ${formatBytes(SERVE_MAX_LOG_BYTES)} of output; the rest was dropped]`,
      });
      return;
    }
    bytes += n;
    lines.push({ ts: Date.now(), s, m: msg });
  };
  return { lines, add };
}

// describe gives a thrown value's message and stack.
function describe(err) {
  if (err instanceof Error || (err && typeof err.stack === 'string')) {
    let s = typeof err.stack === 'string' && err.stack !== '' ? err.stack : `${err.name}: ${err.message}`;
    if (typeof err.code === 'string' && !s.includes(err.code)) {
      const nl = s.indexOf('\n');
      s = nl < 0 ? `${s} (${err.code})` : `${s.slice(0, nl)} (${err.code})${s.slice(nl)}`;
    }
    return s;
  }
  return typeof err === 'string' ? err : util.inspect(err);
}

function seconds(ms) {
  return ms < 1000 ? `${ms}ms` : `${ms / 1000}s`;
}

// handlerOf returns the module's default handler, or null when it exports none.
function handlerOf(mod) {
  const d = mod?.default ?? mod;
  if (typeof d === 'function') return d;
  if (d && d[TAG] === true && typeof d.handler === 'function') return d.handler;
  return null;
}

const TIMEOUT = Symbol('timeout');
// The runtime module, as the bundle of the folder it loads resolves it (see load).
let createContext;
let registry;

// load requires dir's bundle and returns its default handler (null when it declares only an
// agent and tools). It throws what the bundle threw, or when the bundle declares nothing.
function load(dir) {
  ({ createContext, registry } = createRequire(path.join(dir, 'bundle.js'))('@switchboard/functions'));
  const handler = handlerOf(require(path.join(dir, 'bundle.js')));
  const r = registry();
  if (handler === null && r.tools.size === 0 && r.agent === null) {
    const err = new Error(
      'the entry module must export default defineFunction(...) (or declare an agent and its tools with defineAgent and defineTool)',
    );
    err.stack = err.message; // the runner's own frames would only be noise
    throw err;
  }
  return handler;
}

// target picks what an invocation runs: {fn, arg} or {error}.
function target(handler, event) {
  if (event !== null && typeof event === 'object' && event.type === 'tool') {
    const data = event.data !== null && typeof event.data === 'object' ? event.data : {};
    const name = data.tool;
    if (typeof name !== 'string' || name === '') {
      return { error: 'the tool event names no tool (data.tool)' };
    }
    const tool = registry().tools.get(name);
    if (!tool) return { error: `the function has no tool ${name}` };
    return { fn: tool.handler, arg: data.arguments ?? {} };
  }
  if (handler === null) {
    return { error: 'the function has no default handler (it declares only an agent and tools)' };
  }
  return { fn: handler, arg: event };
}

// invoke runs one request {id, event, timeoutMs} with st as its state, and returns its outcome:
// {ok: true, json} (the value's JSON) or {ok: false, error, reason?} (reason 'timeout').
async function invoke(handler, req, st) {
  const timeoutMs = req.timeoutMs > 0 ? req.timeoutMs : 3000;
  const what = target(handler, req.event);
  if (what.error !== undefined) {
    return { ok: false, error: what.error };
  }
  const ctx = createContext({
    invocationId: st.id,
    deadline: Date.now() + timeoutMs,
    log: (m) => st.line('log', m),
  });
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, timeoutMs, TIMEOUT);
  });
  const work = als.run(st, () => {
    try {
      return Promise.resolve(what.fn(what.arg, ctx));
    } catch (err) {
      return Promise.reject(err);
    }
  });
  let outcome;
  try {
    const value = await Promise.race([work, timeout]);
    if (value === TIMEOUT) {
      // The handler runs on, unobserved: its late result is dropped.
      outcome = { ok: false, error: `timed out after ${seconds(timeoutMs)}`, reason: 'timeout' };
    } else {
      let json;
      try {
        json = JSON.stringify(value);
      } catch (err) {
        throw new Error(`the return value cannot be serialised as JSON: ${err.message}`);
      }
      outcome = { ok: true, json: json ?? 'null' };
    }
  } catch (err) {
    outcome = { ok: false, error: describe(err) };
  }
  clearTimeout(timer);
  flush(st);
  return outcome;
}

// run answers a request of the fd mode with frames on fd 4.
async function run(handler, req) {
  const id = String(req.id);
  const st = newState(id, (s, m) => frameLog(id, s, m));
  const r = await invoke(handler, req, st);
  const head = `{"t":"done","id":${JSON.stringify(id)}`;
  if (r.ok) {
    send(`${head},"ok":true,"value":${r.json}}`);
  } else {
    const reason = r.reason ? `,"reason":${JSON.stringify(r.reason)}` : '';
    send(`${head},"ok":false,"error":${JSON.stringify(r.error)}${reason}}`);
  }
}

// manifest is what the loaded bundle declares, as describe mode writes it.
function manifest(handler) {
  const r = registry();
  const m = { t: 'manifest', hasHandler: handler !== null };
  if (r.agent !== null) m.agent = r.agent;
  m.tools = [...r.tools.values()].map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  return m;
}

// pipes runs the fd and describe modes: the bundle beside this file, frames on fd 4.
function pipes(describeMode) {
  out = new net.Socket({ fd: 4, readable: false, writable: true });
  let handler;
  try {
    handler = load(__dirname);
  } catch (err) {
    out.write(JSON.stringify({ t: 'fatal', error: describe(err) }) + '\n', () => process.exit(1));
    return;
  }
  if (describeMode) {
    let line;
    try {
      line = JSON.stringify(manifest(handler));
    } catch (err) {
      line = JSON.stringify({ t: 'fatal', error: `what the function declares cannot be serialised as JSON: ${err.message}` });
    }
    out.write(line + '\n', () => process.exit(0));
    return;
  }
  const input = readline.createInterface({
    input: new net.Socket({ fd: 3, readable: true, writable: false }),
    crlfDelay: Infinity,
  });
  input.on('line', (line) => {
    let req;
    try {
      req = JSON.parse(line);
    } catch {
      return; // never sent by the supervisor
    }
    run(handler, req);
  });
  input.on('close', () => process.exit(0));
  send('{"t":"ready"}');
}

// fail ends serve mode: one line on stderr, exit 1.
function fail(msg) {
  rawWrite.stderr(`runner: ${msg}\n`, () => process.exit(1));
}

// fetchBundle gets the bundle, retrying what may pass (the network, 5xx) a few times.
async function fetchBundle(url, key) {
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  let last;
  for (let attempt = 0; attempt < 5; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
    let res;
    try {
      res = await fetch(url, { headers, signal: AbortSignal.timeout(30000) });
    } catch (err) {
      last = `fetching the bundle: ${err.cause?.message ?? err.message}`;
      continue;
    }
    if (res.ok) return Buffer.from(await res.arrayBuffer());
    last = `fetching the bundle: HTTP ${res.status}`;
    if (res.status < 500) break;
  }
  throw new Error(last);
}

// layOut writes dir as the local runtime does: bundle.js, and the runtime module under both
// its names.
function layOut(dir, bundle) {
  const runtime = fs.readFileSync(path.join(__dirname, 'functions.js'));
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'bundle.js'), bundle);
  for (const m of RUNTIME_MODULES) {
    const mdir = path.join(dir, 'node_modules', m);
    fs.mkdirSync(mdir, { recursive: true });
    fs.writeFileSync(path.join(mdir, 'package.json'), JSON.stringify({ name: m, version: '1.0.0', main: 'index.js' }) + '\n');
    fs.writeFileSync(path.join(mdir, 'index.js'), runtime);
  }
}

function reply(res, status, body) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

// answer runs a serve-mode request and gives its response's JSON.
async function answer(handler, req) {
  const logs = logCollector();
  const st = newState(String(req.id ?? ''), logs.add);
  const r = await invoke(handler, req, st);
  const lines = () => JSON.stringify(logs.lines);
  if (r.ok && Buffer.byteLength(r.json) > SERVE_MAX_RESULT_BYTES) {
    r.ok = false;
    r.error = `the return value is larger than ${formatBytes(SERVE_MAX_RESULT_BYTES)} of JSON`;
  }
  if (r.ok) return `{"ok":true,"value":${r.json},"logs":${lines()}}`;
  return JSON.stringify({ ok: false, reason: r.reason ?? 'error', error: r.error, logs: logs.lines });
}

// serve runs serve mode.
async function serve(portArg) {
  const port = Number(portArg);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return fail(`--serve needs a port, got ${util.inspect(portArg)}`);
  const env = process.env;
  const url = env.SWITCHBOARD_BUNDLE_URL;
  const want = (env.SWITCHBOARD_BUNDLE_SHA256 ?? '').toLowerCase();
  const dir = path.resolve(env.SWITCHBOARD_WORK_DIR || '/tmp/function');
  if (!url) return fail('SWITCHBOARD_BUNDLE_URL is not set');
  if (!/^[0-9a-f]{64}$/.test(want)) return fail('SWITCHBOARD_BUNDLE_SHA256 is not a sha256 (64 hex digits)');

  let handler;
  let state = 'loading'; // loaded, stopping
  let inFlight = 0;
  const server = http.createServer((req, res) => {
    const route = (req.url ?? '').split('?')[0];
    if (route === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
      reply(res, state === 'loaded' ? 200 : 503, { status: state });
      return;
    }
    if (route !== '/invoke') return reply(res, 404, { ok: false, error: 'not found' });
    if (req.method !== 'POST') return reply(res, 405, { ok: false, error: 'POST only' });
    const chunks = [];
    let size = 0;
    let tooLarge = Number(req.headers['content-length']) > SERVE_MAX_BODY_BYTES;
    req.on('data', (c) => {
      size += c.length;
      if (size > SERVE_MAX_BODY_BYTES) tooLarge = true;
      if (!tooLarge) chunks.push(c);
    });
    req.on('error', () => {});
    req.on('end', async () => {
      if (tooLarge) {
        return reply(res, 413, { ok: false, error: `the request is larger than ${formatBytes(SERVE_MAX_BODY_BYTES)}` });
      }
      if (state !== 'loaded') return reply(res, 503, { ok: false, error: `the function is ${state}` });
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply(res, 400, { ok: false, error: 'the request is not JSON' });
      }
      if (body === null || typeof body !== 'object' || typeof body.id !== 'string' || body.id === '') {
        return reply(res, 400, { ok: false, error: 'the request needs an id' });
      }
      inFlight++;
      try {
        reply(res, 200, await answer(handler, body));
      } finally {
        inFlight--;
        if (state === 'stopping' && inFlight === 0) process.exit(0);
      }
    });
  });
  // An invocation may run up to 15 minutes; idle connections outlive the client's.
  server.requestTimeout = 0;
  server.keepAliveTimeout = 65000;
  server.on('error', (err) => fail(`serving on port ${port}: ${err.message}`));
  process.on('SIGTERM', () => {
    state = 'stopping';
    server.close();
    if (inFlight === 0) process.exit(0);
  });
  await new Promise((resolve) => server.listen(port, resolve));

  let bundle;
  try {
    bundle = await fetchBundle(url, env.ZAVU_API_KEY);
  } catch (err) {
    return fail(err.message);
  }
  const got = crypto.createHash('sha256').update(bundle).digest('hex');
  if (got !== want) {
    return fail(`the bundle's sha256 is ${got}, not ${want}: refusing to run it`);
  }
  try {
    layOut(dir, bundle);
  } catch (err) {
    return fail(`writing the bundle into ${dir}: ${err.message}`);
  }
  try {
    handler = load(dir);
  } catch (err) {
    return fail(`the function could not load: ${describe(err)}`);
  }
  if (state === 'loading') state = 'loaded';
  processLine('log', `runner: the function loaded (bundle ${got}); serving on port ${port}`);
}

function main() {
  // Stacks point into the TypeScript sources (esbuild inlines a source map).
  process.setSourceMapsEnabled?.(true);
  const mode = process.argv[2];
  if (mode === '--serve') {
    serve(process.argv[3]);
    return;
  }
  pipes(mode === '--describe');
}

main();
