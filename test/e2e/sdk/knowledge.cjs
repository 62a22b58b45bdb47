// Every knowledge-base, document and flow operation of the published client against Switchboard
// (TestKnowledgeAndFlowsThroughThePublishedClient). It throws, and node exits non-zero, at the
// first answer the client does not expect.
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

// say plays an inbound message from the contact through the sandbox and returns the agent's
// new answers (outbound messages that were not there before), oldest first.
async function say(from, text, answers) {
  const before = new Set();
  let conversationId;
  const res = await fetch(process.env.API_URL + '/v1/sandbox/inbound', {
    method: 'POST', headers: { Authorization: 'Bearer ' + process.env.API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ from, text }),
  });
  assert.equal(res.status, 200);
  conversationId = (await res.json()).message.conversationId;
  for (let i = 0; i < 150; i++) {
    const page = await client.conversations.listMessages(conversationId, { limit: 100 });
    const out = page.items.filter((m) => m.direction === 'outbound').reverse();
    if (out.length >= answers) return out.map((m) => m.text);
    await sleep(100);
  }
  assert.fail(`no ${answers} answers to ${text}`);
}

async function main() {
  const senders = await client.senders.list();
  const senderId = senders.items[0].id;
  const { agent } = await client.senders.agent.create(senderId, {
    name: 'Help desk', provider: 'zavu', model: 'sandbox', systemPrompt: 'Answer from the documents.',
  });

  // Knowledge bases.
  let kb = (await client.senders.agent.knowledgeBases.create(senderId, { name: 'Help centre', description: 'FAQ' })).knowledgeBase;
  assert.equal(kb.agentId, agent.id);
  assert.equal(kb.documentCount, 0);
  const bases = [];
  for await (const b of client.senders.agent.knowledgeBases.list(senderId)) bases.push(b.id);
  assert.deepEqual(bases, [kb.id]);
  kb = (await client.senders.agent.knowledgeBases.update(kb.id, { senderId, name: 'Help center', description: null })).knowledgeBase;
  assert.equal(kb.name, 'Help center');
  assert.equal(kb.description ?? null, null);
  await refused(400, () => client.senders.agent.knowledgeBases.create(senderId, { name: '' }));

  // Documents: processed in the background.
  let doc = (await client.senders.agent.knowledgeBases.documents.create(kb.id, {
    senderId, title: 'Returns policy', content: 'Shipping takes three days.\n\nItems may be returned within 30 days for a full refund.',
  })).document;
  assert.equal(doc.knowledgeBaseId, kb.id);
  for (let i = 0; i < 100 && !doc.isProcessed; i++) {
    await sleep(100);
    doc = (await client.senders.agent.knowledgeBases.documents.retrieveDocument(doc.id, { senderId, kbId: kb.id })).document;
  }
  assert.equal(doc.isProcessed, true);
  assert.ok(doc.chunkCount >= 1 && doc.contentLength > 50);
  const docs = [];
  for await (const d of client.senders.agent.knowledgeBases.documents.list(kb.id, { senderId })) docs.push(d.id);
  assert.deepEqual(docs, [doc.id]);
  doc = (await client.senders.agent.knowledgeBases.documents.updateDocument(doc.id, { senderId, kbId: kb.id, title: 'Returns' })).document;
  assert.equal(doc.title, 'Returns');
  await refused(400, () => client.senders.agent.knowledgeBases.documents.create(kb.id, { senderId, title: 'No content', content: '' }));
  await refused(404, () => client.senders.agent.knowledgeBases.documents.create('kb_nosuchbase0', { senderId, title: 't', content: 'c' }));

  // The agent answers from it, and its execution counts the chunks.
  const [answer] = await say('+15005550177', 'Can I return an item for a refund?', 1);
  assert.equal(answer, '[sandbox] From Returns: Items may be returned within 30 days for a full refund.');
  const executions = await client.senders.agent.executions.list(senderId);
  assert.ok(executions.items[0].knowledgeChunksUsed >= 1);

  // Flows: a keyword starts one, whose questions are asked in turn.
  let flow = (await client.senders.agent.flows.create(senderId, {
    name: 'Book', trigger: { type: 'keyword', keywords: ['book'] }, priority: 5,
    steps: [
      { id: 'name', type: 'collect', config: { question: 'Your name?', field: 'name' }, nextStepId: 'day' },
      { id: 'day', type: 'collect', config: { question: 'Which day?', field: 'day', validation: 'date' }, nextStepId: 'ok' },
      { id: 'ok', type: 'message', config: { text: 'See you on {{day}}, {{name}}.' } },
    ],
  })).flow;
  assert.equal(flow.agentId, agent.id);
  assert.equal(flow.enabled, true);
  assert.equal(flow.steps[2].nextStepId ?? null, null);
  flow = (await client.senders.agent.flows.update(flow.id, { senderId, description: 'Books a visit' })).flow;
  assert.equal(flow.description, 'Books a visit');
  assert.equal((await client.senders.agent.flows.retrieve(flow.id, { senderId })).flow.name, 'Book');
  const copy = (await client.senders.agent.flows.duplicate(flow.id, { senderId, newName: 'Book copy' })).flow;
  assert.equal(copy.enabled, false);
  const enabled = [];
  for await (const f of client.senders.agent.flows.list(senderId, { enabled: true })) enabled.push(f.id);
  assert.deepEqual(enabled, [flow.id]);
  await client.senders.agent.flows.delete(copy.id, { senderId });
  await refused(400, () => client.senders.agent.flows.create(senderId, {
    name: 'Bad', trigger: { type: 'keyword', keywords: ['x'] }, steps: [{ id: 'a', type: 'tool', config: { tool: 'nope' } }] }));

  const contact = '+15005550178';
  assert.deepEqual(await say(contact, 'book', 1), ['Your name?']);
  await refused(409, () => client.senders.agent.flows.delete(flow.id, { senderId }));
  assert.deepEqual(await say(contact, 'Grace', 2), ['Your name?', 'Which day?']);
  assert.deepEqual((await say(contact, '2026-12-03', 3))[2], 'See you on 2026-12-03, Grace.');
  await client.senders.agent.flows.delete(flow.id, { senderId });
  await refused(404, () => client.senders.agent.flows.retrieve(flow.id, { senderId }));

  await client.senders.agent.knowledgeBases.documents.delete(doc.id, { senderId, kbId: kb.id });
  await refused(404, () => client.senders.agent.knowledgeBases.documents.retrieveDocument(doc.id, { senderId, kbId: kb.id }));
  await client.senders.agent.knowledgeBases.delete(kb.id, { senderId });
  await refused(404, () => client.senders.agent.knowledgeBases.retrieve(kb.id, { senderId }));
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
