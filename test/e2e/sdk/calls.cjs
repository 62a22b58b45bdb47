// Every call operation of the published client against Switchboard
// (TestCallsThroughThePublishedClient): a test key's call through the sandbox's scripted caller
// from create to completed with its transcript, the list with its filters, a hangup, and the
// refusals. It throws, and node exits non-zero, at the first answer the client does not expect.
'use strict';
const assert = require('node:assert/strict');
const { createRequire } = require('node:module');
const sdk = createRequire(process.env.SDK_DIR + '/')('@zavudev/sdk');
const Zavudev = sdk.Zavudev || sdk.default;

const client = new Zavudev({ apiKey: process.env.API_KEY, baseURL: process.env.API_URL, maxRetries: 0 });

async function refused(status, fn) {
  try {
    await fn();
  } catch (e) {
    assert.equal(e.status, status, `want ${status}, got ${e.status}: ${e.message}`);
    return e;
  }
  assert.fail(`want ${status}, the call succeeded`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const active = (s) => ['queued', 'ringing', 'in_progress'].includes(s);

async function ended(id) {
  for (let i = 0; i < 300; i++) {
    const { call } = await client.calls.retrieve(id);
    if (!active(call.status)) return call;
    await sleep(100);
  }
  assert.fail(`call ${id} did not end`);
}

async function main() {
  const senders = await client.senders.list();
  const senderId = senders.items[0].id;
  await client.senders.agent.create(senderId, {
    name: 'Phone desk', provider: 'zavu', model: 'sandbox', systemPrompt: 'Help callers.',
  });
  await client.senders.agent.update(senderId, { voice: { enabled: true, greeting: 'Hello from the sandbox.' } });

  // A call to a sandbox number that asks two questions, then hangs up.
  let { call } = await client.calls.create({ to: '+15005550102', senderId, metadata: { ticket: 'T-1' } });
  assert.equal(call.direction, 'outbound');
  assert.equal(call.to, '+15005550102');
  assert.ok(['ringing', 'in_progress'].includes(call.status), call.status);
  const id = call.id;
  call = await ended(id);
  assert.equal(call.status, 'completed');
  assert.equal(call.endReason, 'hangup');
  assert.equal(call.metadata.ticket, 'T-1');
  assert.ok(call.durationSeconds >= 1);
  assert.equal(call.cost, 0);
  assert.equal(call.turnCount, 5);
  assert.deepEqual(call.transcript.map((t) => t.role), ['assistant', 'user', 'assistant', 'user', 'assistant']);
  assert.equal(call.transcript[0].text, 'Hello from the sandbox.');
  assert.equal(call.transcript[0].seq, 0);
  assert.match(call.transcript[2].text, /Question 1/);

  // The list, most recent first, without transcripts, and its filters.
  const busy = (await client.calls.create({ to: '+15005550020' })).call;
  assert.equal((await ended(busy.id)).status, 'busy');
  const all = [];
  for await (const c of client.calls.list({ limit: 1 })) all.push(c);
  assert.deepEqual(all.map((c) => c.id), [busy.id, id]);
  assert.equal(all[1].transcript, undefined);
  const done = (await client.calls.list({ status: 'completed', direction: 'outbound' })).items.map((c) => c.id);
  assert.deepEqual(done, [id]);
  assert.equal((await client.calls.list({ direction: 'inbound' })).items.length, 0);

  // A hangup ends a call that would talk for 99 turns; a second one is refused.
  const long = (await client.calls.create({ to: '+15005550199' })).call;
  for (let i = 0; i < 100; i++) {
    const { call: c } = await client.calls.retrieve(long.id);
    if (c.status === 'in_progress' && c.turnCount >= 3) break;
    await sleep(100);
  }
  const hung = (await client.calls.hangup(long.id)).call;
  assert.equal(hung.status, 'completed');
  assert.equal(hung.endReason, 'api_hangup');
  await refused(409, () => client.calls.hangup(long.id));

  // Refusals.
  await refused(400, () => client.calls.create({ to: '5551234' }));
  await refused(400, () => client.calls.create({ to: '+15005550102', maxDurationMinutes: 0 }));
  await refused(404, () => client.calls.create({ to: '+15005550102', senderId: 'nobody' }));
  await refused(404, () => client.calls.retrieve('call_nope'));
  await refused(400, () => client.calls.list({ status: 'talking' }));
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
