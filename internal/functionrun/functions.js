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
 * createContext(info) builds ctx; it is the runner's, not part of the functions' API.
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

function secretsOf(env) {
  const out = {};
  for (const [k, v] of Object.entries(env)) {
    if (PLATFORM_KEYS.has(k) || PLATFORM_PREFIXES.some((p) => k.startsWith(p))) continue;
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

module.exports = { defineFunction, createContext };
