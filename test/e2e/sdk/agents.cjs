// Every agent operation of the published client against Switchboard (TestAgentsThroughThePublishedClient).
// It throws, and node exits non-zero, at the first answer the client does not expect.
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

async function main() {
  const senders = await client.senders.list();
  const senderId = senders.items[0].id;

  // The sender-scoped agent: created enabled on its sender; the key is never shown.
  let { agent } = await client.senders.agent.create(senderId, {
    name: 'Support', provider: 'openai', model: 'gpt-4o-mini', systemPrompt: 'Answer briefly.', apiKey: 'sk-test-key',
    contextWindowMessages: 8, temperature: 0.4, triggerOnChannels: ['sms'],
  });
  assert.equal(agent.senderId, senderId);
  assert.deepEqual(agent.senderIds, [senderId]);
  assert.equal(agent.enabled, true);
  assert.equal(agent.temperature, 0.4);
  assert.equal(agent.contextWindowMessages, 8);
  assert.ok(!('apiKey' in agent), 'the key is never shown');
  assert.ok(!JSON.stringify(agent).includes('sk-test-key'));
  // A second agent on the sender is refused; a missing key too.
  await refused(400, () => client.senders.agent.create(senderId, { name: 'Again', provider: 'openai', model: 'm', systemPrompt: 'x', apiKey: 'k' }));
  const missing = await refused(400, () => client.agents.create({ name: 'x' }));
  assert.match(missing.message, /provider|model|systemPrompt/);

  assert.equal((await client.senders.agent.retrieve(senderId)).agent.id, agent.id);
  agent = (await client.senders.agent.update(senderId, { maxTokens: 300, temperature: null })).agent;
  assert.equal(agent.maxTokens, 300);
  assert.equal(agent.temperature, null);
  const stats = await client.senders.agent.stats(senderId);
  assert.equal(typeof stats.totalInvocations, 'number');
  assert.equal(typeof stats.totalCost, 'number');

  // The agent-scoped operations: created disabled, with no sender.
  let other = (await client.agents.create({ name: 'Spare', provider: 'zavu', model: 'llama3.2', systemPrompt: 'Hi.' })).agent;
  assert.equal(other.enabled, false);
  assert.equal(other.senderId, '');
  const listed = [];
  for await (const a of client.agents.list({ limit: 1 })) listed.push(a.id);
  assert.deepEqual(listed, [other.id, agent.id], 'newest first, across pages');
  assert.equal((await client.agents.retrieve(other.id)).agent.name, 'Spare');
  other = (await client.agents.update(other.id, { name: 'Renamed' })).agent;
  assert.equal(other.name, 'Renamed');
  await client.agents.update(other.id); // no body: no change
  // A sender answers with one agent; the primary sender is part of its agent.
  await refused(400, () => client.agents.senders.connect(other.id, { senderId }));
  await refused(400, () => client.agents.senders.disconnect(senderId, { agentId: agent.id }));
  await refused(404, () => client.agents.retrieve('agt-nosuchagent0'));
  await client.agents.delete(other.id);
  await refused(404, () => client.agents.retrieve(other.id));

  // An inbound message, played by the sandbox, is answered by the agent (the sandbox model).
  const inbound = await fetch(process.env.API_URL + '/v1/sandbox/inbound', {
    method: 'POST', headers: { Authorization: 'Bearer ' + process.env.API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ from: '+15005550199', text: 'hello agent' }),
  });
  assert.equal(inbound.status, 200);
  const { message } = await inbound.json();
  let reply;
  for (let i = 0; i < 100 && !reply; i++) {
    const page = await client.conversations.listMessages(message.conversationId);
    reply = page.items.find((m) => m.direction === 'outbound');
    if (!reply) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(reply, 'the agent answered');
  assert.equal(reply.text, '[gpt-4o-mini] You said: hello agent');
  assert.equal(reply.metadata.agentId, agent.id);

  // Its execution, recorded.
  const executions = await client.senders.agent.executions.list(senderId, { status: 'success' });
  assert.ok(executions.items.length >= 1);
  const execution = (await client.senders.agent.executions.retrieve(executions.items[0].id, { senderId })).execution;
  assert.equal(execution.status, 'success');
  assert.equal(execution.responseText, '[gpt-4o-mini] You said: hello agent');
  await refused(400, () => client.senders.agent.executions.list(senderId, { status: 'nope' }));

  // Tools: the secret is shown once; tests are recorded (a tool that cannot be reached fails the
  // run, and the endpoint still answers); rotation gives a new secret.
  const tool = (await client.senders.agent.tools.create(senderId, {
    name: 'get_order_status', description: 'Look up an order.', webhookUrl: 'https://tools.invalid/orders',
    parameters: { type: 'object', properties: { orderNumber: { type: 'string', description: 'The number' } }, required: ['orderNumber'] },
  })).tool;
  assert.ok(tool.webhookSecret, 'the secret on create');
  assert.equal(tool.agentId, agent.id);
  const listedTools = await client.senders.agent.tools.list(senderId);
  assert.deepEqual(listedTools.items.map((t) => t.id), [tool.id]);
  const readTool = (await client.senders.agent.tools.retrieve(tool.id, { senderId })).tool;
  assert.ok(!readTool.webhookSecret, 'never on a later read');
  assert.equal((await client.senders.agent.tools.update(tool.id, { senderId, description: 'Find an order.' })).tool.description, 'Find an order.');
  const run = (await client.senders.agent.tools.test(tool.id, { senderId, testParams: { orderNumber: 'A-1' } })).run;
  assert.equal(run.success, false);
  const runs = await client.senders.agent.tools.listTestRuns(tool.id, { senderId });
  assert.equal(runs.items[0].id, run.id);
  const rotated = await client.senders.agent.tools.webhook.rotateSecret(tool.id, { senderId });
  assert.ok(rotated.secret && rotated.secret !== tool.webhookSecret);
  await refused(400, () => client.senders.agent.tools.create(senderId, {
    name: 'x', description: 'd', webhookUrl: 'http://tools.invalid/x', parameters: { type: 'object', properties: {}, required: [] } }));
  await client.senders.agent.tools.delete(tool.id, { senderId });
  await refused(404, () => client.senders.agent.tools.retrieve(tool.id, { senderId }));

  // The dry run: the model's answer, nothing written.
  const dry = await client.agents.test(agent.id, { message: 'just testing' });
  assert.equal(dry.success, true);
  assert.equal(dry.text, '[gpt-4o-mini] You said: just testing');
  assert.ok(Array.isArray(dry.warnings));

  // Voices and templates.
  const voices = await client.agents.listVoices({ language: 'en' });
  assert.ok(voices.items.length > 0 && voices.items.every((v) => v.language.startsWith('en')));
  assert.ok(voices.languages.includes('auto'));
  const templates = await client.agentTemplates.list();
  assert.ok(templates.items.length >= 4);
  const template = (await client.agentTemplates.retrieve(templates.items[0].id)).template;
  assert.ok(template.files.length >= 1 && template.files[0].content.length > 0);
  await refused(404, () => client.agentTemplates.retrieve('no-such-template'));

  await client.senders.agent.delete(senderId);
  await refused(404, () => client.senders.agent.retrieve(senderId));
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
