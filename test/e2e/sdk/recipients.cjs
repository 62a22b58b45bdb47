// One recipient's messages through the published client (TestRecipientListsThroughThePublishedClient):
// messages.list({ to }) answers only that recipient's messages, newest first, through the cursor,
// with the other filters; once a contact is deleted, its erased messages no longer answer to its
// address. (Which days a page reads is shown by internal/app's
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

  // Deleting a contact erases the person (in the background): their messages no longer name
  // them, so a list of their address finds nothing.
  const person = await client.contacts.create({ channels: [{ channel: 'sms', identifier: '+15005550403' }] });
  await client.messages.send({ to: '+15005550403', text: 'your code is 1234' });
  assert.equal((await client.messages.list({ to: '+15005550403' })).items.length, 1);
  await client.contacts.delete(person.id);
  try {
    await client.contacts.retrieve(person.id);
    assert.fail('a deleted contact is still there');
  } catch (e) {
    assert.equal(e.status, 404);
  }
  let left = 1;
  for (let i = 0; i < 120 && left > 0; i++) {
    left = (await client.messages.list({ to: '+15005550403' })).items.length;
    if (left > 0) await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(left, 0, 'the erased person\'s messages still name them after 30 s');
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
