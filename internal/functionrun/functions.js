'use strict';
/*
 * The runtime module of Switchboard functions, served to every function as both
 * `@zavudev/functions` and `@switchboard/functions` (same content; two module instances,
 * which is why definitions are tagged with a registered symbol rather than a class).
 *
 * API
 *
 *   defineFunction(handler) -> definition
 *     handler: async (event, ctx) => value. Throws a TypeError unless handler is a function.
 *     Returns a frozen object tagged with Symbol.for('switchboard.function') that holds the
 *     handler; the entry module default-exports it:
 *       export default defineFunction(async (event, ctx) => { ... });
 *     The handler's return value is JSON-serialised (undefined becomes null).
 *
 *   defineTool(def) -> tool
 *     Declares a tool the function's agent may call. def: {name, description, parameters,
 *     handler}:
 *       name         /^[a-zA-Z0-9_-]{1,64}$/, unique within the function
 *       description  a non-empty string of at most 1024 characters
 *       parameters   a plain object, the JSON Schema of the arguments (JSON-serialisable);
 *                    {type: 'object', properties: {}} when absent
 *       handler      async (args, ctx) => value: args is the call's arguments ({} when none),
 *                    ctx the same as a default handler's; the value is JSON-serialised
 *     Throws a TypeError when def is not so, and an Error when a tool of that name exists.
 *     Registers the tool (see the registry below) and returns a frozen copy of def. The
 *     platform calls it with a tool event, {type: 'tool', data: {tool: name, arguments}}.
 *       defineTool({ name: 'get_order', description: '...', parameters: {...},
 *                    handler: async (args, ctx) => ({ found: true }) });
 *
 *   defineAgent(config) -> config
 *     Declares the function's agent (senderId, name, provider, model, prompt, ...). config: a
 *     plain object, JSON-serialisable once functions are dropped. Throws a TypeError when it is
 *     not so, and an Error on a second call. Registers a JSON-safe deep copy (as it is at the
 *     call: the platform reads it once, when the function deploys) and returns config.
 *
 *   A module that declares an agent or tools needs no default export. What a module declares
 *   when it loads is read once at deploy (functionrun.Describe), which makes the agent and its
 *   tools; a tool event then runs the tool named in it, and any other event the default
 *   handler (an error when there is none).
 *
 *   ctx, the handler's second argument:
 *     invocationId     this run's id; every log line carries it
 *     functionId       process.env.SWITCHBOARD_FUNCTION_ID
 *     deploymentId     process.env.SWITCHBOARD_DEPLOYMENT_ID
 *     log(...args)     one "log" line, formatted like console.log
 *     secrets          frozen copy of the function's own variables: process.env without the
 *                      platform's (SWITCHBOARD_*, NODE_*, ZAVUDEV_*, TZ); ZAVU_API_KEY is in it
 *     env              process.env
 *     request(method, path, body)
 *                      calls the API: fetch(process.env.ZAVUDEV_BASE_URL + path) with
 *                      `Authorization: Bearer ${process.env.ZAVU_API_KEY}` and a JSON body
 *                      (when body is not undefined). Resolves to the parsed JSON answer (null
 *                      for 204 or an empty body). A non-2xx answer rejects with an Error whose
 *                      message is the answer's `message` (or the status text) and with
 *                      .status, .code and .body (the parsed answer) set.
 *     send(body)       request('POST', '/v1/messages', body)
 *     remainingTimeMs() milliseconds left before the invocation times out
 *
 * createContext(info) builds ctx and registry() returns the registry; they are the runner's, not
 * part of the functions' API. The registry, {agent: <JSON-safe copy or null>, tools: Map name ->
 * {name, description, parameters (JSON-safe copy), handler}}, lives on
 * globalThis[Symbol.for('switchboard.registry')]: one per process, shared by both module names.
 */

const util = require('node:util');

const TAG = Symbol.for('switchboard.function');

// Variables that belong to the platform, not to the function: kept out of ctx.secrets.
const PLATFORM_PREFIXES = ['SWITCHBOARD_', 'NODE_', 'ZAVUDEV_'];
const PLATFORM_KEYS = new Set(['TZ']);

function defineFunction(handler) {
  if (typeof handler !== 'function') {
    throw new TypeError('defineFunction expects a function (event, ctx) => value, got ' + typeof handler);
  }
  return Object.freeze({ [TAG]: true, handler });
}

const REGISTRY = Symbol.for('switchboard.registry');

// registry returns the process's registry, making it on first use.
function registry() {
  let r = globalThis[REGISTRY];
  if (!r) {
    r = { agent: null, tools: new Map() };
    Object.defineProperty(globalThis, REGISTRY, { value: r, enumerable: false, writable: false, configurable: false });
  }
  return r;
}
registry();

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_DESCRIPTION = 1024;

function isPlainObject(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

// jsonCopy is a deep copy of v through JSON: functions, symbols and undefined are dropped
// (array elements too), toJSON applies. It throws a TypeError naming what on a cycle or a BigInt.
function jsonCopy(v, what) {
  let json;
  try {
    json = JSON.stringify(v, (_key, value) =>
      Array.isArray(value) ? value.filter((e) => typeof e !== 'function' && typeof e !== 'symbol' && e !== undefined) : value,
    );
  } catch (err) {
    throw new TypeError(`${what} must be JSON-serialisable: ${err && err.message}`);
  }
  return json === undefined ? undefined : JSON.parse(json);
}

function defineTool(def) {
  if (!def || typeof def !== 'object') {
    throw new TypeError('defineTool expects an object {name, description, parameters, handler}, got ' + (def === null ? 'null' : typeof def));
  }
  const { name, description, handler } = def;
  let { parameters } = def;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw new TypeError(`defineTool: name must match ${TOOL_NAME} (letters, digits, _ and -, at most 64), got ${util.inspect(name)}`);
  }
  if (typeof description !== 'string' || description.trim() === '' || description.length > MAX_DESCRIPTION) {
    throw new TypeError(`defineTool: tool ${name}: description must be a non-empty string of at most ${MAX_DESCRIPTION} characters`);
  }
  if (parameters === undefined || parameters === null) {
    parameters = { type: 'object', properties: {} };
  } else if (!isPlainObject(parameters)) {
    throw new TypeError(`defineTool: tool ${name}: parameters must be a plain object (a JSON Schema), got ${util.inspect(parameters, { depth: 0 })}`);
  }
  if (typeof handler !== 'function') {
    throw new TypeError(`defineTool: tool ${name}: handler must be a function (args, ctx) => value, got ${typeof handler}`);
  }
  const schema = jsonCopy(parameters, `defineTool: tool ${name}: parameters`);
  const r = registry();
  if (r.tools.has(name)) {
    throw new Error(`defineTool: a tool named ${name} is already defined`);
  }
  r.tools.set(name, Object.freeze({ name, description, parameters: schema, handler }));
  return Object.freeze({ name, description, parameters, handler });
}

function defineAgent(config) {
  if (!isPlainObject(config)) {
    throw new TypeError('defineAgent expects a plain object, got ' + (config === null ? 'null' : Array.isArray(config) ? 'an array' : typeof config));
  }
  const r = registry();
  if (r.agent !== null) {
    throw new Error('defineAgent: the function already defines an agent (one per function)');
  }
  r.agent = Object.freeze(jsonCopy(config, 'defineAgent: the agent'));
  return config;
}

function secretsOf(env) {
  // SWITCHBOARD_SECRET_KEYS names the function's own variables (a pod's image sets more).
  const own = typeof env.SWITCHBOARD_SECRET_KEYS === 'string' ? new Set(env.SWITCHBOARD_SECRET_KEYS.split(',')) : null;
  const out = {};
  for (const [k, v] of Object.entries(env)) {
    if (PLATFORM_KEYS.has(k) || PLATFORM_PREFIXES.some((p) => k.startsWith(p))) continue;
    if (own !== null && !own.has(k)) continue;
    out[k] = v;
  }
  return Object.freeze(out);
}

async function request(method, path, body, signal) {
  const env = process.env;
  const base = env.ZAVUDEV_BASE_URL;
  if (!base) throw new Error('ctx.request: ZAVUDEV_BASE_URL is not set');
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError('ctx.request: path must start with "/"');
  }
  const headers = { Accept: 'application/json' };
  if (env.ZAVU_API_KEY) headers.Authorization = `Bearer ${env.ZAVU_API_KEY}`;
  const init = { method: String(method).toUpperCase(), headers, signal };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(base.replace(/\/+$/, '') + path, init);
  const text = await res.text();
  let parsed = null;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!res.ok) {
    const obj = parsed && typeof parsed === 'object' ? parsed : {};
    const msg = typeof obj.message === 'string' && obj.message !== '' ? obj.message : res.statusText || `HTTP ${res.status}`;
    const err = new Error(msg);
    err.status = res.status;
    err.code = obj.code;
    err.body = parsed;
    throw err;
  }
  return res.status === 204 ? null : parsed;
}

// createContext builds a handler's ctx. info: {invocationId, deadline (epoch ms), log(line)}.
function createContext(info) {
  const env = process.env;
  const remainingTimeMs = () => Math.max(0, info.deadline - Date.now());
  const req = (method, path, body) => request(method, path, body, AbortSignal.timeout(Math.max(1, remainingTimeMs())));
  return {
    invocationId: info.invocationId,
    functionId: env.SWITCHBOARD_FUNCTION_ID ?? '',
    deploymentId: env.SWITCHBOARD_DEPLOYMENT_ID ?? '',
    log: (...args) => info.log(util.format(...args)),
    secrets: secretsOf(env),
    env,
    request: req,
    send: (body) => req('POST', '/v1/messages', body),
    remainingTimeMs,
  };
}

module.exports = { defineFunction, defineTool, defineAgent, createContext, registry };
