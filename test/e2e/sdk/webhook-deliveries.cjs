// The webhook delivery log through the published client (TestWebhookDeliveryLogThroughThePublishedClient).
// The log's routes are Switchboard's own, so the client reaches them with its generic get and
// post, with its own authentication, retries off and error types: the sender's webhook goes to a
// loopback receiver, a message's deliveries are listed and read with their attempts, one is
// replayed and arrives again with its event id, the endpoint's health is read and it is
// enabled, and bad input is refused with 400. (Failures, the disabling of an endpoint and the
// replay of a range are driven by internal/app's TestTheWebhookDeliveryLog: their schedule takes
// minutes in dev.) It throws, and node exits non-zero, at the first answer it does not expect.
'use strict';
const assert = require('node:assert/strict');
const http = require('node:http');
const { createRequire } = require('node:module');
const sdk = createRequire(process.env.SDK_DIR + '/')('@zavudev/sdk');
const Zavudev = sdk.Zavudev || sdk.default;

const client = new Zavudev({ apiKey: process.env.API_KEY, baseURL: process.env.API_URL, maxRetries: 0 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, check) {
  for (let i = 0; i < 120; i++) {
    const got = await check();
    if (got) return got;
    await sleep(250);
  }
  assert.fail(what + ': not within 30 s');
}

async function main() {
  const took = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      took.push(JSON.parse(body).id);
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    const senders = await client.senders.list();
    const senderId = senders.items[0].id;
    await client.senders.update(senderId, { webhookUrl: `http://127.0.0.1:${receiver.address().port}/hook`, webhookEvents: ['message.sent'] });
    // The webhook delivers once its signing secret exists: a message sent until one arrives.
    let messageId;
    await until('a delivery to the new webhook', async () => {
      messageId = (await client.messages.send({ to: '+15005550100', text: 'log me' })).message.id;
      await sleep(500);
      return took.length > 0;
    });

    const page = await until('the delivery in the log', async () => {
      const p = await client.get(`/v1/senders/${senderId}/webhook/deliveries`, { query: { messageId, status: 'delivered' } });
      return p.items.length === 1 ? p : null;
    });
    const listed = page.items[0];
    assert.equal(listed.event, 'message.sent');
    assert.equal(listed.endpoint, 'sender');
    assert.equal(listed.senderId, senderId);
    assert.equal(listed.mode, 'test');
    assert.equal(listed.attemptCount, 1);
    assert.ok(took.includes(listed.id), 'the listed id is the event id the receiver took');

    const { delivery } = await client.get(`/v2/webhook/deliveries/${listed.id}`);
    assert.equal(delivery.data.messageId, messageId);
    assert.equal(delivery.attempts.length, 1);
    assert.equal(delivery.attempts[0].statusCode, 204);
    assert.equal(delivery.attempts[0].replay, false);

    // A replay: the same event id arrives again, and the log shows the attempt as a replay.
    const replayed = await client.post(`/v2/webhook/deliveries/${listed.id}/replay`);
    assert.equal(replayed.delivery.status, 'pending');
    assert.equal(replayed.delivery.replays, 1);
    await until('the replay to arrive', async () => took.filter((id) => id === listed.id).length === 2);
    const after = await until('the replay in the log', async () => {
      const { delivery } = await client.get(`/v1/senders/${senderId}/webhook/deliveries/${listed.id}`);
      return delivery.status === 'delivered' && delivery.attempts.length === 2 ? delivery : null;
    });
    assert.equal(after.attempts[1].replay, true);

    const v2 = await client.get('/v2/webhook/deliveries', { query: { endpoint: 'sender', senderId, messageId } });
    assert.deepEqual(v2.items.map((d) => d.id), [listed.id]);

    const health = await client.get('/v2/webhook/endpoints');
    const mine = health.items.find((h) => h.senderId === senderId);
    assert.equal(mine.enabled, true);
    assert.equal(mine.consecutiveFailures, 0);
    assert.ok(mine.succeeded24h >= 2 && mine.successRate === 1, JSON.stringify(mine));
    const enabled = await client.post(`/v1/senders/${senderId}/webhook/enable`);
    assert.equal(enabled.endpoint.enabled, true);
    const since = new Date(Date.now() - 3600e3).toISOString();
    const range = await client.post('/v2/webhook/deliveries/replay', { body: { endpoint: 'sender', senderId, since } });
    assert.equal(range.replayed, 0, 'nothing failed');

    for (const [what, call] of [
      ['an unknown status', () => client.get('/v2/webhook/deliveries', { query: { status: 'lost' } })],
      ['a range without since', () => client.post('/v2/webhook/deliveries/replay', { body: { endpoint: 'sender', senderId } })],
    ]) {
      try {
        await call();
        assert.fail(what + ' was taken');
      } catch (e) {
        assert.ok(e instanceof sdk.APIError || e.status, what + ': ' + e);
        assert.equal(e.status, 400, what);
      }
    }
    try {
      await client.get('/v2/webhook/deliveries/evt_nobody');
      assert.fail('an unknown delivery was found');
    } catch (e) {
      assert.equal(e.status, 404);
    }
    console.log('ok');
  } finally {
    receiver.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
