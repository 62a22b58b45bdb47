// Conformance findings, tried as a new user would with the published client
// (TestConformanceThroughThePublishedClient): an invalid number still names the region it parses
// to, and receiving asked of a sender with no email address is ignored and shows false (the
// spec's words), not refused. It throws, and node exits non-zero, at the first answer the client
// does not expect.
'use strict';
const assert = require('node:assert/strict');
const { createRequire } = require('node:module');
const sdk = createRequire(process.env.SDK_DIR + '/')('@zavudev/sdk');
const Zavudev = sdk.Zavudev || sdk.default;

const client = new Zavudev({ apiKey: process.env.API_KEY, baseURL: process.env.API_URL, maxRetries: 0 });

async function main() {
  // The UK's drama range parses, and libphonenumber calls it invalid: still the UK.
  const drama = await client.introspect.validatePhone({ phoneNumber: '+447700900123' });
  assert.equal(drama.validNumber, false);
  assert.equal(drama.countryCode, 'GB');
  const valid = await client.introspect.validatePhone({ phoneNumber: '+442071838750' });
  assert.equal(valid.validNumber, true);
  assert.equal(valid.countryCode, 'GB');

  const created = await client.senders.create({ name: 'Phone only', phoneNumber: '+15005550199' });
  const id = (created.sender || created).id;
  const updated = await client.senders.update(id, { emailReceivingEnabled: true });
  const sender = updated.sender || updated;
  assert.equal(sender.emailReceivingEnabled, false, 'receiving without an email address shows false');
  await client.senders.delete(id);
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
