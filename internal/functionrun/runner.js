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
 */

const { AsyncLocalStorage } = require('node:async_hooks');
const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');
const util = require('node:util');

// A log line longer than this (UTF-16 units) is cut here already, so that a frame stays
// well under 64 KiB; the supervisor applies its own, usually smaller, limit.
const MAX_LINE = 16 * 1024;
const MAX_FRAME = 60 * 1024;
const TAG = Symbol.for('switchboard.function');

const als = new AsyncLocalStorage(); // store: the invocation's state, see run()
const out = new net.Socket({ fd: 4, readable: false, writable: true });

function send(line) {
  out.write(line + '\n');
}

function cut(m) {
  return m.length > MAX_LINE ? m.slice(0, MAX_LINE) + '…' : m;
}

function emitLog(id, s, m) {
  let line = JSON.stringify({ t: 'log', id, s, m: cut(m), ts: Date.now() });
  if (Buffer.byteLength(line) > MAX_FRAME) {
    // Only escapes (control characters) blow a cut line up this much.
    line = JSON.stringify({ t: 'log', id, s, m: m.slice(0, MAX_LINE / 8) + '…', ts: Date.now() });
  }
  send(line);
}

function emit(s, m) {
  const st = als.getStore();
  emitLog(st ? st.id : '', s, m);
}

for (const s of ['log', 'info', 'warn', 'error', 'debug']) {
  console[s] = (...args) => emit(s, util.format(...args));
}

// Raw writes to stdout/stderr inside an invocation become its lines too (the supervisor
// could only guess whom a write on the real pipes belongs to). Outside one they go through.
function capture(name) {
  const stream = process[name];
  const write = stream.write.bind(stream);
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
      emitLog(st.id, name, buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
    if (buf.length > MAX_LINE) {
      emitLog(st.id, name, buf);
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
    if (st[name] !== '') emitLog(st.id, name, st[name]);
    st[name] = '';
  }
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
const { createContext, registry } = require('@switchboard/functions');

// load requires the bundle and returns its default handler (null when it declares only an
// agent and tools). It throws what the bundle threw, or when the bundle declares nothing.
function load() {
  const handler = handlerOf(require(path.join(__dirname, 'bundle.js')));
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

async function run(handler, req) {
  const timeoutMs = req.timeoutMs > 0 ? req.timeoutMs : 3000;
  const st = { id: String(req.id), stdout: '', stderr: '' };
  const what = target(handler, req.event);
  if (what.error !== undefined) {
    send(`{"t":"done","id":${JSON.stringify(st.id)},"ok":false,"error":${JSON.stringify(what.error)}}`);
    return;
  }
  const ctx = createContext({
    invocationId: st.id,
    deadline: Date.now() + timeoutMs,
    log: (m) => emitLog(st.id, 'log', m),
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
  let frame;
  try {
    const value = await Promise.race([work, timeout]);
    if (value === TIMEOUT) {
      // The handler runs on, unobserved: its late result is dropped.
      frame = { ok: false, error: `timed out after ${seconds(timeoutMs)}`, reason: 'timeout' };
    } else {
      let json;
      try {
        json = JSON.stringify(value);
      } catch (err) {
        throw new Error(`the return value cannot be serialised as JSON: ${err.message}`);
      }
      frame = { ok: true, json: json ?? 'null' };
    }
  } catch (err) {
    frame = { ok: false, error: describe(err) };
  }
  clearTimeout(timer);
  flush(st);
  const head = `{"t":"done","id":${JSON.stringify(st.id)}`;
  if (frame.ok) {
    send(`${head},"ok":true,"value":${frame.json}}`);
  } else {
    const reason = frame.reason ? `,"reason":${JSON.stringify(frame.reason)}` : '';
    send(`${head},"ok":false,"error":${JSON.stringify(frame.error)}${reason}}`);
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

function main() {
  // Stacks point into the TypeScript sources (esbuild inlines a source map).
  process.setSourceMapsEnabled?.(true);
  const describeMode = process.argv[2] === '--describe';
  let handler;
  try {
    handler = load();
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

main();
