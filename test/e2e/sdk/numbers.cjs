// The phone-number operations of the published client built so far, against Switchboard
// (TestNumbersThroughThePublishedClient): searching the sandbox's numbers and reading its
// requirements with a test key, buying one, listing, reading, renaming, giving it to a sender
// and taking it back, and releasing it. It
// throws, and node exits non-zero, at the first answer the client does not expect.
'use strict';
const assert = require('node:assert/strict');
const { createRequire } = require('node:module');
const sdk = createRequire(process.env.SDK_DIR + '/')('@zavudev/sdk');
const Zavudev = sdk.Zavudev || sdk.default;

const client = new Zavudev({ apiKey: process.env.API_KEY, baseURL: process.env.API_URL, maxRetries: 0 });

async function main() {
  const local = await client.phoneNumbers.searchAvailable({ countryCode: 'US', type: 'local', capabilities: 'sms,voice', limit: 3 });
  assert.deepEqual(local.items.map((n) => n.phoneNumber), ['+15005550300', '+15005550301', '+15005550302']);
  assert.deepEqual(local.items[0].capabilities, { sms: true, voice: true, mms: true });
  assert.equal(local.items[0].pricing.monthlyPrice, 0);
  const tollFree = await client.phoneNumbers.searchAvailable({ countryCode: 'us', type: 'tollFree', contains: '0325' });
  assert.deepEqual(tollFree.items.map((n) => n.phoneNumber), ['+15005550325']);
  assert.equal((await client.phoneNumbers.searchAvailable({ countryCode: 'DE' })).items.length, 0);
  try {
    await client.phoneNumbers.searchAvailable({ countryCode: 'USA' });
    assert.fail('a three-letter country code was taken');
  } catch (e) {
    assert.equal(e.status, 400);
  }
  // What buying a number asks of the project: the sandbox's table.
  const de = (await client.phoneNumbers.requirements({ countryCode: 'DE', type: 'local' })).items;
  assert.equal(de.length, 1);
  assert.equal(de[0].countryCode, 'DE');
  assert.deepEqual(de[0].requirementTypes.map((r) => r.type), ['textual', 'address', 'document']);
  assert.deepEqual(de[0].requirementTypes[2].acceptanceCriteria.allowedValues, ['business_registration']);
  assert.equal((await client.phoneNumbers.requirements({ countryCode: 'US' })).items.length, 0);

  // Buying: a test key buys the sandbox's numbers, for nothing.
  const bought = (await client.phoneNumbers.purchase({ phoneNumber: '+15005550304', name: 'Primary Line' })).phoneNumber;
  assert.equal(bought.phoneNumber, '+15005550304');
  assert.equal(bought.name, 'Primary Line');
  assert.equal(bought.pricing.monthlyCost, 0);
  assert.ok(['active', 'pending'].includes(bought.status));
  try {
    await client.phoneNumbers.purchase({ phoneNumber: '+14155550100' });
    assert.fail('a test key bought a real number');
  } catch (e) {
    assert.equal(e.status, 400);
  }
  let number = bought;
  for (let i = 0; i < 100 && number.status !== 'active'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    number = (await client.phoneNumbers.retrieve(bought.id)).phoneNumber;
  }
  assert.equal(number.status, 'active');
  const listed = [];
  for await (const n of client.phoneNumbers.list({ status: 'active', limit: 1 })) listed.push(n.id);
  assert.ok(listed.includes(bought.id), `listed ${listed}`);

  // Renamed, given to a sender, taken back, released.
  const sender = await client.senders.create({ name: 'Numbers' });
  const renamed = (await client.phoneNumbers.update(bought.id, { name: 'Support', senderId: sender.id })).phoneNumber;
  assert.equal(renamed.name, 'Support');
  for (let i = 0; i < 100 && number.senderId !== sender.id; i++) {
    await new Promise((r) => setTimeout(r, 100));
    number = (await client.phoneNumbers.retrieve(bought.id)).phoneNumber;
  }
  assert.equal(number.senderId, sender.id);
  try {
    await client.phoneNumbers.release(bought.id);
    assert.fail('a number a sender has was released');
  } catch (e) {
    assert.equal(e.status, 409);
  }
  const cleared = (await client.phoneNumbers.update(bought.id, { name: null, senderId: null })).phoneNumber;
  assert.equal(cleared.name, undefined);
  for (let i = 0; i < 100 && number.senderId !== undefined; i++) {
    await new Promise((r) => setTimeout(r, 100));
    number = (await client.phoneNumbers.retrieve(bought.id)).phoneNumber;
  }
  assert.equal(number.senderId, undefined);
  await client.phoneNumbers.release(bought.id);
  try {
    await client.phoneNumbers.retrieve(bought.id);
    assert.fail('a released number is still there');
  } catch (e) {
    assert.equal(e.status, 404);
  }
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
