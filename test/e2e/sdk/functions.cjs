// Every functions operation of the published client, against Switchboard
// (TestFunctionsThroughThePublishedClient), with a test key (its functions are test-mode and run
// on the sandbox's events): the client's own example function grown to reply, created, updated,
// deployed and polled; triggers on inbound messages and a schedule; an inbound message through
// the sandbox answered by the function, and its logs; a secret read over the public URL; a second
// version and a rollback; a Git link to a loopback repository (GIT_SHA is its branch's head)
// deployed on demand; v2's list and pause; and delete. It throws, and node exits non-zero, at the
// first answer the client does not expect.
'use strict';
const assert = require('node:assert/strict');
const { createRequire } = require('node:module');
const sdk = createRequire(process.env.SDK_DIR + '/')('@zavudev/sdk');
const Zavudev = sdk.Zavudev || sdk.default;

const client = new Zavudev({ apiKey: process.env.API_KEY, baseURL: process.env.API_URL, maxRetries: 0 });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function refused(status, fn) {
  try {
    await fn();
  } catch (e) {
    assert.equal(e.status, status, `${e.status} ${e.message}`);
    return;
  }
  assert.fail(`not refused with ${status}`);
}

// until calls fn every 200 ms until it returns something truthy, for up to ms.
async function until(what, fn, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`${what}: not within ${ms / 1000} s`);
    await sleep(200);
  }
}

// The client's example function (create's doc comment), grown to reply and to answer HTTP.
const source = (body) => `import { defineFunction } from '@zavudev/functions';

export default defineFunction(async (event, ctx) => {
  ctx.log('received', event.type);
  if (event.type === 'message.inbound') {
    await ctx.send({ to: event.data.from, text: 'Echo: ' + event.data.text });
  }
  if (event.type === 'http') return { statusCode: 200, body: ${body} };
});
`;
const v1 = source('{ hello: ctx.secrets.GREETING ?? null }');
const v2 = source('{ hello: ctx.secrets.GREETING ?? null, version: 2 }');

// deployed polls a deployment until it is active (or failed, which fails the script).
async function deployed(deploymentId) {
  const d = await until(`deployment ${deploymentId}`, async () => {
    const { deployment } = await client.functions.getDeployment(deploymentId);
    return ['active', 'failed'].includes(deployment.status) && deployment;
  });
  assert.equal(d.status, 'active', `deployment ${d.id} failed: ${d.errorMessage}\n${d.buildLogs}`);
  return d;
}

// served is what the function's public URL answers.
async function served(url) {
  const res = await fetch(url);
  assert.equal(res.status, 200, `GET ${url}`);
  return res.json();
}

async function main() {
  // Create: a draft.
  const created = (await client.functions.create({ name: 'Echo bot', slug: 'echo-bot', sourceCode: v1 })).function;
  const id = created.id;
  assert.equal(created.slug, 'echo-bot');
  assert.equal(created.name, 'Echo bot');
  assert.equal(created.status, 'draft');
  assert.equal(created.runtime, 'nodejs24');
  assert.equal(created.httpEnabled, false);
  assert.equal(created.publicUrl ?? null, null);
  assert.equal(created.activeDeploymentId ?? null, null);
  assert.equal(typeof created.memoryMb, 'number');
  assert.equal(typeof created.timeoutSec, 'number');
  assert.deepEqual(created.dependencies, {});
  assert.ok(!Number.isNaN(Date.parse(created.createdAt)) && !Number.isNaN(Date.parse(created.updatedAt)));
  await refused(400, () => client.functions.create({ name: 'Again', slug: 'echo-bot' }));

  // Read; updated with no body (no change), then exposed over HTTP.
  assert.equal((await client.functions.retrieve(id)).function.status, 'draft');
  const same = (await client.functions.update(id)).function;
  assert.equal(same.status, 'draft');
  assert.equal(same.httpEnabled, false);
  const exposed = (await client.functions.update(id, { httpEnabled: true })).function;
  assert.equal(exposed.httpEnabled, true);
  const publicUrl = exposed.publicUrl;
  assert.match(publicUrl, /^https?:\/\//);

  // Deploy: a deployment to poll, active once built; the function serves it.
  const first = (await client.functions.deploy(id)).deployment;
  assert.equal(first.functionId, id);
  assert.equal(first.version, 1);
  assert.ok(['pending', 'bundling', 'uploading', 'publishing', 'active'].includes(first.status), first.status);
  const d1 = await deployed(first.id);
  assert.equal(typeof d1.bundleBytes, 'number');
  assert.equal(typeof d1.buildLogs, 'string');
  const active = (await client.functions.retrieve(id)).function;
  assert.equal(active.status, 'active');
  assert.equal(active.activeDeploymentId, d1.id);
  const history = (await client.functions.listDeployments(id)).deployments;
  assert.equal(history.length, 1);
  assert.equal(history[0].id, d1.id);
  assert.equal(history[0].isActive, true);
  assert.equal(history[0].status, 'active');
  assert.equal(typeof history[0].bundleSizeBytes, 'number');
  const events = (await client.functions.listEventTypes()).events;
  assert.ok(events.includes('cron') && events.includes('message.inbound'), `event types ${events}`);

  // Triggers: once per event and sender (again: skipped); a schedule; listed, paused, deleted.
  const added = await client.functions.triggers.create(id, { eventTypes: ['message.inbound'], senderIds: [null] });
  assert.equal(added.added, 1);
  assert.equal(added.skipped, 0);
  assert.equal(added.triggers.length, 1);
  const inboundTrigger = added.triggers[0];
  assert.equal(inboundTrigger.eventType, 'message.inbound');
  assert.equal(inboundTrigger.functionId, id);
  assert.equal(inboundTrigger.active, true);
  assert.equal(inboundTrigger.senderId ?? null, null);
  const again = await client.functions.triggers.create(id, { eventTypes: ['message.inbound'], senderIds: [null] });
  assert.equal(again.added, 0);
  assert.equal(again.skipped, 1);
  const cron = await client.functions.triggers.create(id, { eventTypes: ['cron'], senderIds: [null], cron: '*/5 * * * *' });
  assert.equal(cron.added, 1);
  const cronTrigger = cron.triggers[0];
  assert.equal(cronTrigger.eventType, 'cron');
  assert.equal(cronTrigger.cron, '*/5 * * * *');
  assert.ok(cronTrigger.nextRunAt && !Number.isNaN(Date.parse(cronTrigger.nextRunAt)), `nextRunAt ${cronTrigger.nextRunAt}`);
  await refused(400, () => client.functions.triggers.create(id, { eventTypes: ['cron'], senderIds: [null], cron: 'every minute' }));
  const triggers = (await client.functions.triggers.list(id)).triggers;
  assert.deepEqual(triggers.map((t) => t.id).sort(), [inboundTrigger.id, cronTrigger.id].sort());
  assert.deepEqual(await client.functions.triggers.update(cronTrigger.id, { active: false }), { active: false, ok: true });
  const paused = (await client.functions.triggers.list(id)).triggers.find((t) => t.id === cronTrigger.id);
  assert.equal(paused.active, false);
  assert.equal(await client.functions.triggers.delete(cronTrigger.id), null); // void: 204, null to the client
  assert.deepEqual((await client.functions.triggers.list(id)).triggers.map((t) => t.id), [inboundTrigger.id]);
  await refused(404, () => client.functions.triggers.delete(cronTrigger.id));

  // An inbound message, played by the sandbox, runs it: it replies through the API.
  await client.post('/v1/sandbox/inbound', { body: { from: '+15005550100', text: 'ping' } });
  const reply = await until('the function\'s reply', async () => {
    const page = await client.messages.list({ limit: 50 });
    return page.items.find((m) => m.text === 'Echo: ping');
  });
  assert.equal(reply.to, '+15005550100');

  // Its logs, filtered.
  const logs = await until('the run\'s logs', async () => {
    const page = await client.functions.tailLogs(id, { filterPattern: 'received' });
    return page.events.length > 0 && page;
  });
  assert.ok(logs.events.every((e) => e.message.includes('received') && typeof e.timestamp === 'string'), JSON.stringify(logs.events));
  assert.ok(logs.events.some((e) => e.message.includes('received message.inbound')), JSON.stringify(logs.events));
  assert.ok(logs.nextToken === undefined || logs.nextToken === null || typeof logs.nextToken === 'string');
  const all = await client.functions.tailLogs(id);
  assert.ok(all.events.length >= logs.events.length);

  // Secrets: listed without their value, keys checked, read by the next run.
  await client.functions.secrets.set('GREETING', { functionId: id, value: 'hello-world-42' });
  const secrets = (await client.functions.secrets.list(id)).secrets;
  const greeting = secrets.find((s) => s.key === 'GREETING');
  assert.ok(greeting, JSON.stringify(secrets));
  assert.equal(greeting.valueLast4, 'd-42');
  assert.equal(typeof greeting.id, 'string');
  assert.ok(!JSON.stringify(secrets).includes('hello-world'), 'a secret\'s value was listed');
  assert.ok(greeting.createdAt === undefined || typeof greeting.createdAt === 'number');
  await refused(400, () => client.functions.secrets.set('lower', { functionId: id, value: 'x' }));
  assert.deepEqual(await served(publicUrl), { hello: 'hello-world-42' });
  assert.equal(await client.functions.secrets.unset('GREETING', { functionId: id }), null);
  assert.ok(!(await client.functions.secrets.list(id)).secrets.some((s) => s.key === 'GREETING'));
  assert.deepEqual(await served(publicUrl), { hello: null });

  // A second version, then a rollback to the first: a third version of the first's source.
  const second = (await client.functions.deploy(id, { sourceCode: v2 })).deployment;
  const d2 = await deployed(second.id);
  assert.equal(d2.version, 2);
  assert.deepEqual(await served(publicUrl), { hello: null, version: 2 });
  const rollback = await client.functions.rollbackDeployment(id, { deploymentId: d1.id });
  assert.equal(rollback.rolledBackToVersion, 1);
  const d3 = await deployed(rollback.deployment.id);
  assert.equal(d3.version, 3);
  assert.deepEqual(await served(publicUrl), { hello: null });
  const three = (await client.functions.listDeployments(id, { limit: 10 })).deployments;
  assert.deepEqual(three.map((d) => d.version), [3, 2, 1]);
  assert.deepEqual(three.map((d) => d.isActive), [true, false, false]);
  assert.equal((await client.functions.listDeployments(id, { limit: 1 })).deployments.length, 1);

  // A Git link (a loopback repository): the secret once, updated, deployed on demand, unlinked.
  const linked = await client.functions.gitLink.link(id, { owner: 'acme', repo: 'order-bot', branch: 'main' });
  assert.ok(linked.webhookSecret, 'the webhook secret on link');
  assert.equal(typeof linked.webhookUrl, 'string');
  assert.equal(linked.link.connection, 'manual');
  assert.equal(linked.link.provider, 'github');
  assert.equal(linked.link.owner, 'acme');
  assert.equal(linked.link.repo, 'order-bot');
  assert.equal(linked.link.branch, 'main');
  assert.equal(linked.link.autoDeploy, true);
  assert.equal(linked.link.functionId, id);
  assert.equal(linked.link.lastStatus ?? null, null);
  await refused(400, () => client.functions.gitLink.link(id, { owner: 'acme', repo: 'other' }));
  const read = await client.functions.gitLink.retrieve(id);
  assert.equal(read.webhookSecret, undefined);
  assert.equal(read.webhookUrl, linked.webhookUrl);
  assert.equal(read.link.id, linked.link.id);
  const manualOnly = await client.functions.gitLink.update(id, { autoDeploy: false });
  assert.equal(manualOnly.link.autoDeploy, false);
  assert.equal(manualOnly.webhookSecret, undefined);
  await refused(400, () => client.functions.gitLink.update(id));
  assert.deepEqual(await client.functions.gitLink.deployNow(id), { scheduled: true });
  const done = await until('the Git deploy', async () => {
    const { link } = await client.functions.gitLink.retrieve(id);
    return (link.lastStatus === 'deployed' || link.lastStatus === 'failed') && link.lastCommitSha === process.env.GIT_SHA && link;
  }, 60000);
  assert.equal(done.lastStatus, 'deployed', `the Git deploy failed: ${done.lastError}`);
  assert.ok(done.lastDeployAt && !Number.isNaN(Date.parse(done.lastDeployAt)));
  assert.equal(done.lastCommitMessage, 'from git');
  await until('the Git version serving', async () => (await served(publicUrl)).from === 'git');
  assert.equal(await client.functions.gitLink.unlink(id), null);
  await refused(404, () => client.functions.gitLink.retrieve(id));

  // v2: the list, and the pause v1 has not.
  const v2list = await client.get('/v2/functions');
  assert.ok(v2list.items.some((f) => f.id === id), JSON.stringify(v2list));
  const v2fn = await client.get('/v2/functions/' + id);
  assert.equal(v2fn.function.id, id);
  const pausedFn = await client.patch('/v2/functions/' + id, { body: { paused: true } });
  assert.equal(pausedFn.function.status, 'disabled');
  assert.equal((await client.functions.retrieve(id)).function.status, 'disabled');
  assert.equal((await fetch(publicUrl)).status, 503, 'a paused function\'s URL answers');

  // Delete: it goes, and says what went.
  assert.deepEqual(await client.functions.delete(id), { deleted: true, name: 'Echo bot', slug: 'echo-bot' });
  await refused(404, () => client.functions.retrieve(id));
  await refused(404, () => client.functions.getDeployment(d1.id));
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
