// WhatsApp coexistence sync through the published client, against Switchboard
// (TestWhatsAppSyncThroughThePublishedClient), with the dev system's test key: the default
// sender's sandbox WhatsApp number is a coexistence one; its contacts and history syncs run in
// the sandbox, once each; a sender without WhatsApp has none. It throws, and node exits
// non-zero, at the first answer the client does not expect.
'use strict';
const assert = require('node:assert/strict');
const { createRequire } = require('node:module');
const sdk = createRequire(process.env.SDK_DIR + '/')('@zavudev/sdk');
const Zavudev = sdk.Zavudev || sdk.default;

const client = new Zavudev({ apiKey: process.env.API_KEY, baseURL: process.env.API_URL, maxRetries: 0 });

async function status(promise) {
  try {
    await promise;
    return 200;
  } catch (e) {
    return e.status;
  }
}

async function main() {
  const before = (await client.senders.whatsappSync.retrieve('default')).sync;
  assert.equal(before.isCoexistence, true);
  assert.equal(before.status, 'active');
  assert.equal(before.contacts.canSync, true);
  assert.equal(before.history.status, 'not_requested');

  const contacts = await client.senders.whatsappSync.startContactsSync('default');
  assert.ok(contacts.message.length > 0);
  assert.equal(contacts.sync.contacts.status, 'completed');
  assert.equal(contacts.sync.contacts.canSync, false);
  assert.ok(contacts.sync.contacts.requestedAt);
  assert.equal(await status(client.senders.whatsappSync.startContactsSync('default')), 400);

  const history = await client.senders.whatsappSync.startHistorySync('default');
  assert.equal(history.sync.history.status, 'completed');
  assert.ok(history.sync.history.completedAt);

  const plain = await client.senders.create({ name: 'No WhatsApp' });
  assert.equal(await status(client.senders.whatsappSync.retrieve(plain.id)), 400);
  assert.equal(await status(client.senders.whatsappSync.retrieve('nope')), 404);
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
