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

function handlerOf(mod) {
  const d = mod?.default ?? mod;
  if (typeof d === 'function') return d;
  if (d && d[TAG] === true && typeof d.handler === 'function') return d.handler;
  throw new Error('the entry module must export default defineFunction(...)');
}

const TIMEOUT = Symbol('timeout');
const { createContext } = require('@switchboard/functions');

async function run(handler, req) {
  const timeoutMs = req.timeoutMs > 0 ? req.timeoutMs : 3000;
  const st = { id: String(req.id), stdout: '', stderr: '' };
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
      return Promise.resolve(handler(req.event, ctx));
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

function main() {
  // Stacks point into the TypeScript sources (esbuild inlines a source map).
  process.setSourceMapsEnabled?.(true);
  let handler;
  try {
    handler = handlerOf(require(path.join(__dirname, 'bundle.js')));
  } catch (err) {
    out.write(JSON.stringify({ t: 'fatal', error: describe(err) }) + '\n', () => process.exit(1));
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
