// The regulatory records and URL verification through the published client, against Switchboard
// (TestRegulatoryThroughThePublishedClient), with a test key: an address recorded, listed, read
// and deleted; a file uploaded to the upload URL the client asks for, recorded as a document,
// read, listed and deleted; URLs submitted, listed, read and escalated. It throws, and node
// exits non-zero, at the first answer the client does not expect.
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
  // Addresses.
  const address = (await client.addresses.create({ countryCode: 'DE', locality: 'Berlin', postalCode: '10115',
    streetAddress: '123 Main St', firstName: 'John', lastName: 'Doe' })).address;
  assert.equal(address.status, 'pending');
  assert.equal(address.countryCode, 'DE');
  assert.equal((await client.addresses.retrieve(address.id)).address.postalCode, '10115');
  const addresses = [];
  for await (const a of client.addresses.list({ limit: 1 })) addresses.push(a.id);
  assert.ok(addresses.includes(address.id));
  assert.equal(await status(client.addresses.create({ countryCode: 'DE' })), 400);
  await client.addresses.delete(address.id);
  assert.equal(await status(client.addresses.retrieve(address.id)), 404);

  // Documents: the file goes to the upload URL, which answers its storageId.
  const { uploadUrl } = await client.regulatoryDocuments.uploadURL();
  const file = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(4096, 120)]);
  const up = await fetch(uploadUrl, { method: 'POST', headers: { 'Content-Type': 'application/pdf' }, body: file });
  assert.equal(up.status, 200);
  const { storageId } = await up.json();
  const again = await fetch(uploadUrl, { method: 'POST', headers: { 'Content-Type': 'application/pdf' }, body: file });
  assert.equal(again.status, 400);
  const doc = (await client.regulatoryDocuments.create({ documentType: 'passport', fileSize: file.length, mimeType: 'application/pdf',
    name: 'Passport Scan', storageId })).document;
  assert.equal(doc.status, 'uploaded');
  assert.equal(doc.fileSize, file.length);
  assert.equal((await client.regulatoryDocuments.retrieve(doc.id)).document.name, 'Passport Scan');
  const docs = [];
  for await (const d of client.regulatoryDocuments.list()) docs.push(d.id);
  assert.ok(docs.includes(doc.id));
  assert.equal(await status(client.regulatoryDocuments.create({ documentType: 'passport', fileSize: 1, mimeType: 'application/pdf',
    name: 'x', storageId })), 400);
  await client.regulatoryDocuments.delete(doc.id);
  assert.equal(await status(client.regulatoryDocuments.retrieve(doc.id)), 404);

  // URLs: the sandbox's verdicts.
  const ok = (await client.urls.submitForVerification({ url: 'https://shop.example.com/offer' })).url;
  assert.equal(ok.status, 'approved');
  assert.equal(ok.domain, 'example.com');
  const bad = (await client.urls.submitForVerification({ url: 'https://login.malicious.test/' })).url;
  assert.equal(bad.status, 'malicious');
  const short = (await client.urls.submitForVerification({ url: 'https://bit.ly/abc' })).url;
  assert.equal(short.status, 'rejected');
  assert.equal((await client.urls.retrieveDetails(short.id)).url.url, 'https://bit.ly/abc');
  const rejected = [];
  for await (const u of client.urls.listVerified({ status: 'rejected' })) rejected.push(u.id);
  assert.deepEqual(rejected, [short.id]);
  const escalated = await client.urls.escalate(short.id, { reason: 'This is our official landing page.' });
  assert.equal(escalated.url.status, 'escalated');
  assert.ok(escalated.message.length > 0);
  assert.equal(await status(client.urls.escalate(ok.id, { reason: 'x' })), 400);
  assert.equal(await status(client.urls.submitForVerification({ url: 'ftp://example.com/' })), 400);
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
