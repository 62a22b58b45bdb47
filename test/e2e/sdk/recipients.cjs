// One recipient's messages through the published client (TestRecipientListsThroughThePublishedClient):
// messages.list({ to }) answers only that recipient's messages, newest first, through the cursor,
// with the other filters. (Which days a page reads is shown by internal/app's
// TestRecipientPagesReadTheDaysOfItsMessages: here every message is from today.) It throws, and
// node exits non-zero, at the first answer the client does not expect.
'use strict';
const assert = require('node:assert/strict');
const { createRequire } = require('node:module');
const sdk = createRequire(process.env.SDK_DIR + '/')('@zavudev/sdk');
const Zavudev = sdk.Zavudev || sdk.default;

const client = new Zavudev({ apiKey: process.env.API_KEY, baseURL: process.env.API_URL, maxRetries: 0 });

async function main() {
  const sent = [];
  for (const text of ['one', 'two', 'three']) {
    sent.unshift((await client.messages.send({ to: '+15005550401', text })).message.id);
  }
  await client.messages.send({ to: '+15005550402', text: 'someone else' });

  const ids = [];
  for await (const m of client.messages.list({ to: '+15005550401', limit: 2 })) {
    assert.equal(m.to, '+15005550401');
    ids.push(m.id);
  }
  assert.deepEqual(ids, sent, 'the recipient\'s messages, newest first, across pages');
  const other = await client.messages.list({ to: '+15005550402' });
  assert.equal(other.items.length, 1);
  assert.equal(other.items[0].to, '+15005550402');
  assert.equal((await client.messages.list({ to: '+15005550499' })).items.length, 0);
  assert.equal((await client.messages.list({ to: '+15005550401', status: 'received' })).items.length, 0);
  assert.equal((await client.messages.list({ to: '+15005550401', channel: 'sms' })).items.length, 3);
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
