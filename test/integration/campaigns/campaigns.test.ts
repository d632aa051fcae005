import { QueryTypes } from "sequelize";
import { SYSTEM } from "../../../lib/access";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { startReceiver } from "../../helpers/receiver";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { saveSteps, type EnrollmentRow } from "../../../services/campaigns/enrollments.repo";
import { derivedMessageId } from "../../../services/campaigns/runner";

/**
 * Campaigns through the gateway against real PostgreSQL: the lifecycle and
 * its 409s, workflow validation with paths, versions and restore, actions
 * and triggers, and journeys that run (send through the one send path,
 * waits, conditions, tags), enroll from an event before its answer, and
 * complete on a goal.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let templateId: string;

beforeAll(async () => {
  app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "crm",
      "events",
      "segments",
      "templates",
      "messages",
      "campaigns",
      "jobs",
    ],
    env: { MESSAGE_POLL_MS: "50", CAMPAIGN_POLL_MS: "50" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  await ctx.owner.client.patch(ctx.ws, {
    settings: { sender: { fromName: "Acme", fromEmail: "news@acme.test" } },
  });
  const template = await ctx.owner.client.post(`${ctx.ws}/templates`, {
    name: "Welcome",
    channel: "email",
    content: { subject: "Welcome {{ contact.firstName }}", html: "<p>Hi {{ contact.firstName }}</p>" },
  });
  templateId = template.body.id;
});

afterAll(async () => {
  await app?.stop();
});

const c = () => ctx.owner.client;
const contact = async (body: Record<string, unknown>) =>
  (await c().post(`${ctx.ws}/contacts`, body)).body.id as string;

async function campaignWith(workflow: Record<string, unknown>, name = "Journey") {
  const res = await c().post(`${ctx.ws}/campaigns`, { name, workflow });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

function finished(campaignId: string, enrollmentId: string) {
  return waitFor(async () => {
    const list = (await c().get(`${ctx.ws}/campaigns/${campaignId}/enrollments`)).body.data as Array<
      Record<string, any>
    >;
    const e = list.find((x) => x.id === enrollmentId);
    return e && ["completed", "exited", "failed"].includes(e.status) ? e : undefined;
  }, 10_000);
}

test("lifecycle: a draft with an entry; moves the contract does not list are 409 INVALID_STATE; execute publishes; no delete while active", async () => {
  const created = await c().post(`${ctx.ws}/campaigns`, { name: "Onboarding" });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    name: "Onboarding",
    type: "workflow",
    status: "draft",
    publishedVersion: null,
    stats: { enrolled: 0, active: 0, completed: 0, exited: 0 },
    workflow: { nodes: [{ id: "entry", type: "entry", config: {} }], edges: [] },
    triggers: [],
  });
  const id = created.body.id;
  const paused = await c().patch(`${ctx.ws}/campaigns/${id}`, { status: "paused" });
  expect(paused.status).toBe(409);
  expect(paused.body.code).toBe("INVALID_STATE");
  const past = await c().patch(`${ctx.ws}/campaigns/${id}`, {
    status: "scheduled",
    scheduledAt: "2020-01-01T00:00:00Z",
  });
  expect(past.status).toBe(409);

  const executed = await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  expect(executed.status).toBe(200);
  expect(executed.body).toMatchObject({ status: "active", publishedVersion: 1, draftChanged: false });
  expect((await c().delete(`${ctx.ws}/campaigns/${id}`)).status).toBe(409);
  expect((await c().patch(`${ctx.ws}/campaigns/${id}`, { status: "paused" })).body.status).toBe("paused");
  expect((await c().patch(`${ctx.ws}/campaigns/${id}`, { status: "archived" })).body.status).toBe("archived");
  const renamed = await c().patch(`${ctx.ws}/campaigns/${id}`, { name: "Again" });
  expect(renamed.status).toBe(409);

  const list = await c().get(`${ctx.ws}/campaigns?status=archived&search=Onboard`);
  expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([id]);
  expect((await c().delete(`${ctx.ws}/campaigns/${id}`)).status).toBe(200);
  expect((await c().get(`${ctx.ws}/campaigns/${id}`)).status).toBe(404);
});

test("workflow: validated on save with the path of each problem; POST only validates; actions edit the draft", async () => {
  const id = (await c().post(`${ctx.ws}/campaigns`, { name: "Checks" })).body.id;
  const bad = await c().put(`${ctx.ws}/campaigns/${id}/workflow`, {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "w", type: "wait", config: { duration: "two days" } },
    ],
    edges: [{ from: "entry", to: "w" }],
  });
  expect(bad.status).toBe(400);
  expect(bad.body.code).toBe("VALIDATION_ERROR");
  expect(bad.body.details).toContainEqual({
    field: "nodes[1].config.duration",
    message: expect.stringMatching(/ISO 8601/),
  });

  const cycle = await c().post(`${ctx.ws}/campaigns/${id}/workflow`, {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "a", type: "wait", config: { duration: "P1D" } },
      { id: "b", type: "wait", config: { duration: "P1D" } },
    ],
    edges: [
      { from: "entry", to: "a" },
      { from: "a", to: "b" },
      { from: "b", to: "a" },
    ],
  });
  expect(cycle.status).toBe(200);
  expect(cycle.body.valid).toBe(false);
  expect(cycle.body.errors[0]).toMatchObject({ field: "edges", message: expect.stringMatching(/cycle/) });

  const branches = await c().post(`${ctx.ws}/campaigns/${id}/workflow`, {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "c", type: "condition", config: { filter: { match: "all", conditions: [] } } },
      { id: "s", type: "send", config: { channel: "email", templateId: "missing" } },
    ],
    edges: [
      { from: "entry", to: "c" },
      { from: "c", to: "s", branch: "maybe" },
    ],
  });
  expect(branches.body.errors).toContainEqual({
    field: "edges[1].branch",
    message: "must be one of yes, no (node c)",
  });

  const unknownTemplate = await c().put(`${ctx.ws}/campaigns/${id}/workflow`, {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "s", type: "send", config: { channel: "email", templateId: "missing" } },
    ],
    edges: [{ from: "entry", to: "s" }],
  });
  expect(unknownTemplate.status).toBe(400);
  expect(unknownTemplate.body.details).toEqual([
    { field: "nodes[1].config.templateId", message: "no template missing" },
  ]);

  // actions: add at the end of the path, change, remove (the path joins up).
  const wait = await c().post(`${ctx.ws}/campaigns/${id}/actions`, {
    id: "w1",
    type: "wait",
    config: { duration: "P2D" },
  });
  expect(wait.status).toBe(201);
  const send = await c().post(`${ctx.ws}/campaigns/${id}/actions`, {
    id: "s1",
    type: "send",
    config: { channel: "email", templateId },
  });
  expect(send.status).toBe(201);
  const tag = await c().post(`${ctx.ws}/campaigns/${id}/actions`, {
    id: "t1",
    type: "update_contact",
    config: { addTags: ["x"] },
    after: "w1",
  });
  expect(tag.body.next).toEqual([{ to: "s1", branch: null }]);
  expect(
    (await c().patch(`${ctx.ws}/campaigns/${id}/actions/w1`, { config: { duration: "soon" } })).status,
  ).toBe(400);
  expect(
    (await c().patch(`${ctx.ws}/campaigns/${id}/actions/w1`, { config: { duration: "PT6H" } })).status,
  ).toBe(200);
  expect((await c().delete(`${ctx.ws}/campaigns/${id}/actions/t1`)).status).toBe(200);
  const actions = (await c().get(`${ctx.ws}/campaigns/${id}/actions`)).body;
  expect(actions).toEqual([
    { id: "w1", type: "wait", config: { duration: "PT6H" }, next: [{ to: "s1", branch: null }] },
    { id: "s1", type: "send", config: { channel: "email", templateId }, next: [] },
  ]);
  expect((await c().delete(`${ctx.ws}/campaigns/${id}/actions/entry`)).status).toBe(404);
});

test("versions freeze the draft and triggers; restore copies one back; clone copies draft and triggers", async () => {
  const id = await campaignWith({
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "w", type: "wait", config: { duration: "P1D" } },
    ],
    edges: [{ from: "entry", to: "w" }],
  });
  const trigger = await c().post(`${ctx.ws}/campaigns/${id}/triggers`, {
    type: "event",
    config: { eventType: "trial.started" },
  });
  expect(trigger.status).toBe(201);
  expect(trigger.body).toMatchObject({ type: "event", reentry: "once", active: true, cooldownHours: null });
  expect(
    (await c().post(`${ctx.ws}/campaigns/${id}/triggers`, { type: "event", config: {} })).body.details[0]
      .field,
  ).toBe("config.eventType");
  expect(
    (await c().post(`${ctx.ws}/campaigns/${id}/triggers`, { type: "manual", reentry: "cooldown" })).body
      .details[0].field,
  ).toBe("cooldownHours");

  const v1 = await c().post(`${ctx.ws}/campaigns/${id}/versions`, { note: "first" });
  expect(v1.status).toBe(201);
  expect(v1.body).toMatchObject({
    number: 1,
    note: "first",
    triggers: [{ type: "event", config: { eventType: "trial.started" } }],
  });
  await c().put(`${ctx.ws}/campaigns/${id}/workflow`, {
    nodes: [{ id: "entry", type: "entry", config: {} }],
    edges: [],
  });
  await c().delete(`${ctx.ws}/campaigns/${id}/triggers/${trigger.body.id}`);
  expect((await c().get(`${ctx.ws}/campaigns/${id}`)).body).toMatchObject({
    draftChanged: true,
    triggers: [],
  });

  const restored = await c().post(`${ctx.ws}/campaigns/${id}/versions/${v1.body.id}/restore`);
  expect(restored.status).toBe(200);
  expect(restored.body.workflow.nodes.map((n: { id: string }) => n.id)).toEqual(["entry", "w"]);
  expect(restored.body.triggers).toMatchObject([{ type: "event", config: { eventType: "trial.started" } }]);
  expect(restored.body).toMatchObject({ status: "draft", publishedVersion: 1, draftChanged: true });
  const versions = await c().get(`${ctx.ws}/campaigns/${id}/versions`);
  expect(versions.body.data.map((v: { number: number }) => v.number)).toEqual([1]);

  const clone = await c().post(`${ctx.ws}/campaigns/${id}/clone`);
  expect(clone.status).toBe(201);
  expect(clone.body).toMatchObject({ name: "Journey (copy)", status: "draft", publishedVersion: null });
  expect(clone.body.workflow).toEqual(restored.body.workflow);
  expect(clone.body.triggers).toHaveLength(1);
});

test("a journey runs: the send goes through the send path once, the wait holds, the condition branches, the contact is tagged", async () => {
  const id = await campaignWith({
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "hello", type: "send", config: { channel: "email", templateId } },
      { id: "pause", type: "wait", config: { duration: "PT1S" } },
      {
        id: "vip",
        type: "condition",
        config: {
          filter: { match: "all", conditions: [{ field: "tags", operator: "contains", value: "vip" }] },
        },
      },
      { id: "tag", type: "update_contact", config: { addTags: ["journeyed"], set: { city: "Lisbon" } } },
      { id: "bye", type: "exit", config: {} },
    ],
    edges: [
      { from: "entry", to: "hello" },
      { from: "hello", to: "pause" },
      { from: "pause", to: "vip" },
      { from: "vip", to: "tag", branch: "yes" },
      { from: "vip", to: "bye", branch: "no" },
    ],
  });
  expect((await c().post(`${ctx.ws}/campaigns/${id}/execute`)).body.status).toBe("active");
  const vip = await contact({ email: "vip@example.com", firstName: "Vera", tags: ["vip"] });
  const plain = await contact({ email: "plain@example.com", firstName: "Pat" });

  const enrolled = await c().post(`${ctx.ws}/campaigns/${id}/enroll`, { contactId: vip });
  expect(enrolled.status).toBe(201);
  expect(enrolled.body).toMatchObject({ campaignId: id, contactId: vip, version: 1, status: "active" });
  expect((await c().post(`${ctx.ws}/campaigns/${id}/enroll`, { contactId: vip })).status).toBe(409);
  const batch = await c().post(`${ctx.ws}/campaigns/${id}/batch`, { contactIds: [plain, vip, "nobody"] });
  expect(batch.body).toEqual({
    enrolled: 1,
    skipped: [
      { contactId: vip, reason: "already_enrolled" },
      { contactId: "nobody", reason: "not_found" },
    ],
  });
  const waiting = await waitFor(async () => {
    const e = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments?contactId=${vip}`)).body.data[0];
    return e.status === "waiting" ? e : undefined;
  }, 10_000);
  expect(waiting.currentNodeId).toBe("pause");

  const done = await finished(id, enrolled.body.id);
  expect(done).toMatchObject({ status: "completed", exitReason: "path_end", currentNodeId: "tag" });
  const tagged = (await c().get(`${ctx.ws}/contacts/${vip}`)).body;
  expect(tagged.tags).toEqual(expect.arrayContaining(["vip", "journeyed"]));
  expect(tagged.city).toBe("Lisbon");

  const messages = (await c().get(`${ctx.ws}/messages?campaignId=${id}&contactId=${vip}`)).body.data;
  expect(messages).toHaveLength(1);
  expect(messages[0]).toMatchObject({
    id: derivedMessageId(enrolled.body.id, "hello"),
    campaignId: id,
    enrollmentId: enrolled.body.id,
    templateId,
  });
  const logs = (await c().get(`${ctx.ws}/campaigns/${id}/logs?enrollmentId=${enrolled.body.id}`)).body.data;
  expect(
    logs
      .map((l: { nodeId: string; outcome: string; branch: string | null }) => [l.nodeId, l.outcome, l.branch])
      .reverse(),
  ).toEqual([
    ["entry", "ok", null],
    ["hello", "ok", null],
    ["pause", "ok", null],
    ["pause", "ok", null],
    ["vip", "branched", "yes"],
    ["tag", "ok", null],
  ]);

  const other = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments?contactId=${plain}`)).body.data[0];
  expect(await finished(id, other.id)).toMatchObject({
    status: "exited",
    exitReason: "exit",
    currentNodeId: "bye",
  });
  expect((await c().get(`${ctx.ws}/contacts/automation?contactId=${plain}`)).body.data).toHaveLength(1);

  // A retried step re-queues nothing: the send's id is already taken.
  const retried = (await app.broker.call(
    "messages.enqueue",
    {
      channel: "email",
      templateId,
      contactIds: [vip],
      messageIds: [derivedMessageId(enrolled.body.id, "hello")],
      campaignId: id,
    },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  )) as { queued: number; skipped: unknown[] };
  expect(retried).toMatchObject({ queued: 0, skipped: [{ contactId: vip, reason: "already_queued" }] });
  expect((await c().get(`${ctx.ws}/campaigns/${id}`)).body.stats).toEqual({
    enrolled: 2,
    active: 0,
    completed: 1,
    exited: 1,
  });
});

test("an event trigger enrolls before POST /events answers, once; a goal event completes the enrollment from a wait", async () => {
  const id = await campaignWith({
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "later", type: "wait", config: { duration: "P3D" } },
      { id: "bought", type: "goal", config: { event: "purchase" } },
    ],
    edges: [{ from: "entry", to: "later" }],
  });
  await c().post(`${ctx.ws}/campaigns/${id}/triggers`, { type: "event", config: { eventType: "signup" } });
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const who = await contact({ email: "goal@example.com" });

  expect((await c().post(`${ctx.ws}/events`, { type: "signup", contactId: who })).status).toBe(201);
  const [enrollment] = (await c().get(`${ctx.ws}/contacts/automation?contactId=${who}`)).body.data;
  expect(enrollment).toMatchObject({ campaignId: id, contactId: who });
  expect(enrollment.triggerId).toBeTruthy();

  await waitFor(async () => {
    const e = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data[0];
    return e.status === "waiting" ? e : undefined;
  }, 10_000);
  await c().post(`${ctx.ws}/events`, { type: "purchase", contactId: who });
  const [done] = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
  expect(done).toMatchObject({ status: "completed", exitReason: "goal" });
  expect(done.finishedAt).toBeTruthy();

  // Re-entry `once`: a second signup enrolls no more.
  await c().post(`${ctx.ws}/events`, { type: "signup", contactId: who });
  expect((await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data).toHaveLength(1);
});

test("concurrent events enroll together: each contact once by a `once` trigger, the whole path logged in order", async () => {
  const id = await campaignWith(
    {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "later", type: "wait", config: { duration: "P3D" } },
      ],
      edges: [{ from: "entry", to: "later" }],
    },
    "Burst",
  );
  await c().post(`${ctx.ws}/campaigns/${id}/triggers`, { type: "event", config: { eventType: "burst" } });
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const people = await Promise.all(
    Array.from({ length: 6 }, (_, i) => contact({ email: `burst-${i}@example.com` })),
  );
  // Two events per contact at once: the second finds the first's enrollment (or its conflict) and adds none.
  const posted = await Promise.all(
    [...people, ...people].map((contactId) => c().post(`${ctx.ws}/events`, { type: "burst", contactId })),
  );
  expect(posted.map((p) => p.status)).toEqual(posted.map(() => 201));
  const enrollments = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments?limit=100`)).body.data;
  expect(enrollments.map((e: { contactId: string }) => e.contactId).sort()).toEqual([...people].sort());
  for (const e of enrollments) {
    await waitFor(async () => {
      const logs = (await c().get(`${ctx.ws}/campaigns/${id}/logs?enrollmentId=${e.id}`)).body.data;
      return logs.length === 2 ? logs : undefined;
    }, 10_000);
    const logs = (await c().get(`${ctx.ws}/campaigns/${id}/logs?enrollmentId=${e.id}`)).body.data;
    // Newest first: the wait, then the entry that led to it (saved by the wait's one statement).
    expect(logs.map((l: { nodeId: string }) => l.nodeId)).toEqual(["later", "entry"]);
  }
});

test("dry-run explains the path with the run's interpreter and saves nothing", async () => {
  const id = await campaignWith({
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "w", type: "wait", config: { duration: "P1D" } },
      {
        id: "c",
        type: "condition",
        config: {
          filter: {
            match: "all",
            conditions: [{ field: "email", operator: "ends_with", value: "@example.org" }],
          },
        },
      },
      { id: "s", type: "send", config: { channel: "email", templateId } },
      { id: "x", type: "exit", config: {} },
    ],
    edges: [
      { from: "entry", to: "w" },
      { from: "w", to: "c" },
      { from: "c", to: "s", branch: "yes" },
      { from: "c", to: "x", branch: "no" },
    ],
  });
  await c().post(`${ctx.ws}/campaigns/${id}/triggers`, { type: "event", config: { eventType: "visit" } });
  const who = await contact({ email: "dry@example.org" });
  const res = await c().post(`${ctx.ws}/campaigns/${id}/dry-run`, {
    contactId: who,
    event: { type: "other" },
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ wouldEnroll: false, reason: "no active trigger enrolls on other" });
  expect(res.body.path).toEqual([
    { nodeId: "entry", outcome: "ok", branch: null, reason: "entered" },
    {
      nodeId: "w",
      outcome: "ok",
      branch: null,
      reason: expect.stringMatching(/^waits until .*; then waited$/),
    },
    { nodeId: "c", outcome: "branched", branch: "yes", reason: "condition met" },
    { nodeId: "s", outcome: "ok", branch: null, reason: `would send template ${templateId} (email)` },
  ]);
  expect(
    (await c().post(`${ctx.ws}/campaigns/${id}/dry-run`, { contactId: who, event: { type: "visit" } })).body
      .wouldEnroll,
  ).toBe(true);
  expect((await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data).toEqual([]);
  expect((await c().get(`${ctx.ws}/messages?campaignId=${id}`)).body.data).toEqual([]);
});

test("segment triggers: an entry an event caused enrolls before the event's answer; other entries and exits enroll from the durable membership log, once each", async () => {
  const attendees = await c().post(`${ctx.ws}/segments`, {
    name: "Attendees",
    type: "dynamic",
    filter: { match: "all", conditions: [{ event: "webinar.attended", operator: "performed" }] },
  });
  const list = await c().post(`${ctx.ws}/segments`, { name: "Hand list", type: "static" });
  const wait = {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "w", type: "wait", config: { duration: "P1D" } },
    ],
    edges: [{ from: "entry", to: "w" }],
  };
  const onAttend = await campaignWith(wait, "On attend");
  const onListed = await campaignWith(wait, "On listed");
  const onUnlisted = await campaignWith(wait, "On unlisted");
  const bad = await c().post(`${ctx.ws}/campaigns/${onAttend}/triggers`, {
    type: "segment_entered",
    config: { segmentId: "missing" },
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("config.segmentId");
  for (const [campaignId, type, segmentId] of [
    [onAttend, "segment_entered", attendees.body.id],
    [onListed, "segment_entered", list.body.id],
    [onUnlisted, "segment_exited", list.body.id],
  ]) {
    expect(
      (await c().post(`${ctx.ws}/campaigns/${campaignId}/triggers`, { type, config: { segmentId } })).status,
    ).toBe(201);
    await c().post(`${ctx.ws}/campaigns/${campaignId}/execute`);
  }
  const who = await contact({ email: "segments@example.com" });

  await c().post(`${ctx.ws}/events`, { type: "webinar.attended", contactId: who });
  const enrolled = (await c().get(`${ctx.ws}/contacts/automation?contactId=${who}`)).body.data;
  expect(enrolled.map((e: { campaignId: string }) => e.campaignId)).toEqual([onAttend]);

  await c().post(`${ctx.ws}/segments/${list.body.id}/members`, { contactIds: [who] });
  await waitFor(async () => {
    const data = (await c().get(`${ctx.ws}/campaigns/${onListed}/enrollments`)).body.data;
    return data.length === 1 ? data : undefined;
  }, 10_000);
  await c().request("DELETE", `${ctx.ws}/segments/${list.body.id}/members`, { body: { contactIds: [who] } });
  await waitFor(async () => {
    const data = (await c().get(`${ctx.ws}/campaigns/${onUnlisted}/enrollments`)).body.data;
    return data.length === 1 ? data : undefined;
  }, 10_000);

  // The log reader also saw the entry the event caused: still one enrollment.
  await app.broker.call("campaigns.processDue", {});
  expect((await c().get(`${ctx.ws}/campaigns/${onAttend}/enrollments`)).body.data).toHaveLength(1);
  expect((await c().get(`${ctx.ws}/campaigns/${onListed}/enrollments`)).body.data).toHaveLength(1);
});

test("a template a campaign's version sends cannot be deleted until that campaign is archived", async () => {
  const template = await c().post(`${ctx.ws}/templates`, {
    name: "Kept",
    channel: "email",
    content: { subject: "Kept", html: "<p>Kept</p>" },
  });
  const id = await campaignWith(
    {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "s", type: "send", config: { channel: "email", templateId: template.body.id } },
      ],
      edges: [{ from: "entry", to: "s" }],
    },
    "Uses Kept",
  );
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const refused = await c().delete(`${ctx.ws}/templates/${template.body.id}`);
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({
    code: "CONFLICT",
    error: "The template is in use by campaign Uses Kept",
  });
  await c().patch(`${ctx.ws}/campaigns/${id}`, { status: "paused" });
  await c().patch(`${ctx.ws}/campaigns/${id}`, { status: "archived" });
  expect((await c().delete(`${ctx.ws}/templates/${template.body.id}`)).status).toBe(200);
});

test("contact triggers enroll from the durable domain facts: a created contact, then an updated one (once per fact), by the fields it changed", async () => {
  const wait = {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "w", type: "wait", config: { duration: "P1D" } },
    ],
    edges: [{ from: "entry", to: "w" }],
  };
  const onCreate = await campaignWith(wait, "On create");
  const onUpdate = await campaignWith(wait, "On update");
  const quick = {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "out", type: "exit", config: {} },
    ],
    edges: [{ from: "entry", to: "out" }],
  };
  const onPlan = await campaignWith(quick, "On plan change");
  const onName = await campaignWith(quick, "On last name");
  await c().post(`${ctx.ws}/campaigns/${onCreate}/triggers`, { type: "contact_created" });
  await c().post(`${ctx.ws}/campaigns/${onUpdate}/triggers`, { type: "contact_updated", reentry: "always" });
  const unknown = await c().post(`${ctx.ws}/campaigns/${onPlan}/triggers`, {
    type: "contact_updated",
    config: { fields: ["attributes.plan", "shoeSize"] },
  });
  expect(unknown.status).toBe(400);
  expect(unknown.body.details).toEqual([
    { field: "config.fields[1]", message: "shoeSize is not a field of a contact" },
  ]);
  const watching = await c().post(`${ctx.ws}/campaigns/${onPlan}/triggers`, {
    type: "contact_updated",
    config: { fields: ["attributes.plan", "consent.sms"] },
    reentry: "always",
  });
  expect(watching.status).toBe(201);
  await c().post(`${ctx.ws}/campaigns/${onName}/triggers`, {
    type: "contact_updated",
    config: { fields: ["lastName"] },
    reentry: "always",
  });
  for (const id of [onCreate, onUpdate, onPlan, onName]) await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  // Enrollments of a campaign once each has ended (so the next change may enroll again).
  const ended = (id: string, count: number) =>
    waitFor(async () => {
      const data = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data as Array<
        Record<string, any>
      >;
      return data.length === count && data.every((e) => e.status === "exited") ? data : undefined;
    }, 10_000);

  const who = await contact({ email: "facts@example.com" });
  const created = await waitFor(async () => {
    const data = (await c().get(`${ctx.ws}/campaigns/${onCreate}/enrollments`)).body.data;
    return data.length ? data : undefined;
  }, 10_000);
  expect(created).toMatchObject([{ contactId: who }]);
  expect((await c().get(`${ctx.ws}/campaigns/${onUpdate}/enrollments`)).body.data).toEqual([]);

  await c().patch(`${ctx.ws}/contacts/${who}`, { firstName: "Fay" });
  const updated = await waitFor(async () => {
    const data = (await c().get(`${ctx.ws}/campaigns/${onUpdate}/enrollments`)).body.data;
    return data.length ? data : undefined;
  }, 10_000);
  expect(updated).toMatchObject([{ contactId: who, status: expect.stringMatching(/active|waiting/) }]);
  // The name change passed the plan watcher by; a plan written through ingest (the upsert) and an sms opt-out enroll it.
  await c().post(`${ctx.ws}/contacts/ingest`, {
    contacts: [{ email: "facts@example.com", attributes: { plan: "pro" } }],
  });
  expect(await ended(onPlan, 1)).toMatchObject([{ contactId: who }]);
  await c().put(`${ctx.ws}/contacts/${who}/consent`, { channel: "sms", status: "opted_out" });
  await ended(onPlan, 2);
  // The same plan again is no change of it: only the last name's watcher enrolls.
  await c().patch(`${ctx.ws}/contacts/${who}`, { attributes: { plan: "pro" }, lastName: "Lee" });
  await ended(onName, 1);
  await new Promise((r) => setTimeout(r, 200));
  expect((await c().get(`${ctx.ws}/campaigns/${onPlan}/enrollments`)).body.data).toHaveLength(2);
});

test("webhook, create_task and notify_member steps: a POST with the step's stable idempotency key, one task, one notification per member", async () => {
  const receiver = await startReceiver();
  try {
    const id = await campaignWith(
      {
        nodes: [
          { id: "entry", type: "entry", config: {} },
          {
            id: "hook",
            type: "webhook",
            config: { url: receiver.url("/journey"), headers: { "x-token": "t1" }, body: { hello: "crm" } },
          },
          { id: "task", type: "create_task", config: { title: "Call them", dueInDays: 2 } },
          {
            id: "tell",
            type: "notify_member",
            config: { role: "OWNER", message: "A contact reached the end" },
          },
        ],
        edges: [
          { from: "entry", to: "hook" },
          { from: "hook", to: "task" },
          { from: "task", to: "tell" },
        ],
      },
      "Hand-off",
    );
    await c().post(`${ctx.ws}/campaigns/${id}/execute`);
    const who = await contact({ email: "handoff@example.com" });
    const enrolled = (await c().post(`${ctx.ws}/campaigns/${id}/enroll`, { contactId: who })).body;
    expect(await finished(id, enrolled.id)).toMatchObject({ status: "completed", currentNodeId: "tell" });

    const [posted] = receiver.received.filter((r) => r.path === "/journey");
    expect(JSON.parse(posted.body)).toEqual({ hello: "crm" });
    expect(posted.headers["x-token"]).toBe("t1");
    expect(posted.headers["idempotency-key"]).toBe(derivedMessageId(enrolled.id, "hook"));

    const tasks = (await c().get(`${ctx.ws}/tasks?contactId=${who}`)).body.data;
    expect(tasks).toMatchObject([
      { id: derivedMessageId(enrolled.id, "task"), title: "Call them", contactId: who },
    ]);
    const due = new Date(tasks[0].dueAt).getTime() - Date.now();
    expect(due).toBeGreaterThan(86_400_000 * 1.9);
    const notes = (await c().get(`${ctx.ws}/notifications`)).body.data;
    expect(notes.filter((n: { type: string }) => n.type === "campaign.notification")).toMatchObject([
      { title: "A contact reached the end" },
    ]);
    const logs = (await c().get(`${ctx.ws}/campaigns/${id}/logs?enrollmentId=${enrolled.id}&nodeId=hook`))
      .body.data;
    expect(logs[0]).toMatchObject({ outcome: "ok", detail: "posted: HTTP 200" });

    // A receiver that refuses (4xx) fails the step with its answer.
    receiver.setBehaviour(() => ({ status: 410, body: "gone" }));
    const other = await contact({ email: "handoff2@example.com" });
    const second = (await c().post(`${ctx.ws}/campaigns/${id}/enroll`, { contactId: other })).body;
    expect(await finished(id, second.id)).toMatchObject({
      status: "failed",
      exitReason: "step_failed",
      currentNodeId: "hook",
    });
  } finally {
    await receiver.close();
  }
});

test("batch by a segment or a filter enrolls the whole audience in one statement, as a job", async () => {
  const wait = {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "w", type: "wait", config: { duration: "P1D" } },
    ],
    edges: [{ from: "entry", to: "w" }],
  };
  const id = await campaignWith(wait, "Bulk");
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const a = await contact({ email: "bulk-a@bulk.example.com" });
  const b = await contact({ email: "bulk-b@bulk.example.com" });
  const list = await c().post(`${ctx.ws}/segments`, { name: "Bulk list", type: "static", contactIds: [a] });

  const bySegment = await c().post(`${ctx.ws}/campaigns/${id}/batch`, { segmentId: list.body.id });
  expect(bySegment.status).toBe(202);
  expect((await finishedJob(c(), ctx.ws, bySegment.body.jobId)).result).toEqual({ enrolled: 1, skipped: 0 });

  const byFilter = await c().post(`${ctx.ws}/campaigns/${id}/batch`, {
    filter: {
      match: "all",
      conditions: [{ field: "email", operator: "ends_with", value: "@bulk.example.com" }],
    },
  });
  expect(byFilter.status).toBe(202);
  expect((await finishedJob(c(), ctx.ws, byFilter.body.jobId)).result).toEqual({ enrolled: 1, skipped: 1 });
  const enrolled = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
  expect(enrolled.map((e: { contactId: string }) => e.contactId).sort()).toEqual([a, b].sort());

  const both = await c().post(`${ctx.ws}/campaigns/${id}/batch`, {
    segmentId: list.body.id,
    contactIds: [a],
  });
  expect(both.status).toBe(400);
  expect((await c().post(`${ctx.ws}/campaigns/${id}/batch`, { segmentId: "missing" })).status).toBe(404);
});

test("the where of an event trigger and of an event wait is asked of the stored event", async () => {
  const id = await campaignWith(
    {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        {
          id: "reply",
          type: "wait",
          config: {
            event: { type: "reply", where: [{ field: "metadata.positive", operator: "eq", value: true }] },
            timeout: "P1D",
          },
        },
        { id: "glad", type: "exit", config: {} },
        { id: "late", type: "exit", config: {} },
      ],
      edges: [
        { from: "entry", to: "reply" },
        { from: "reply", to: "glad", branch: "event" },
        { from: "reply", to: "late", branch: "timeout" },
      ],
    },
    "Upgrades",
  );
  const badWait = await c().post(`${ctx.ws}/campaigns/${id}/workflow`, {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      {
        id: "w",
        type: "wait",
        config: { event: { type: "x", where: [{ field: "nope", operator: "eq" }] }, timeout: "P1D" },
      },
    ],
    edges: [{ from: "entry", to: "w" }],
  });
  expect(badWait.body.errors[0].field).toBe("nodes[1].config.event.where[0].field");
  const badTrigger = await c().post(`${ctx.ws}/campaigns/${id}/triggers`, {
    type: "event",
    config: { eventType: "upgrade", where: [{ field: "nope", operator: "eq", value: 1 }] },
  });
  expect(badTrigger.status).toBe(400);
  expect(badTrigger.body.details[0].field).toBe("config.where[0].field");
  await c().post(`${ctx.ws}/campaigns/${id}/triggers`, {
    type: "event",
    config: { eventType: "upgrade", where: [{ field: "metadata.plan", operator: "eq", value: "pro" }] },
  });
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const who = await contact({ email: "where@example.com" });
  const enrollments = async () => (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;

  await c().post(`${ctx.ws}/events`, { type: "upgrade", contactId: who, metadata: { plan: "free" } });
  expect(await enrollments()).toEqual([]);
  await c().post(`${ctx.ws}/events`, { type: "upgrade", contactId: who, metadata: { plan: "pro" } });
  expect(await enrollments()).toHaveLength(1);

  await waitFor(async () => ((await enrollments())[0].status === "waiting" ? true : undefined), 10_000);
  await c().post(`${ctx.ws}/events`, { type: "reply", contactId: who, metadata: { positive: false } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect((await enrollments())[0]).toMatchObject({ status: "waiting", currentNodeId: "reply" });
  await c().post(`${ctx.ws}/events`, { type: "reply", contactId: who, metadata: { positive: true } });
  const [done] = await waitFor(async () => {
    const list = await enrollments();
    return list[0].status === "exited" ? list : undefined;
  }, 10_000);
  expect(done).toMatchObject({ currentNodeId: "glad", exitReason: "exit" });
});

test("date_anniversary enrolls contacts on the day of their date, in their zone, once that day", async () => {
  const wait = {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "w", type: "wait", config: { duration: "P1D" } },
    ],
    edges: [{ from: "entry", to: "w" }],
  };
  const id = await campaignWith(wait, "Birthdays");
  const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(5, 10);
  for (const [config, field] of [
    [{ field: "firstName", time: "09:00" }, "config.field"],
    [{ field: "attributes.birthday", time: "25:00" }, "config.time"],
  ] as const) {
    const bad = await c().post(`${ctx.ws}/campaigns/${id}/triggers`, { type: "date_anniversary", config });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].field).toBe(field);
  }
  await c().post(`${ctx.ws}/campaigns/${id}/triggers`, {
    type: "date_anniversary",
    config: { field: "attributes.birthday", time: "00:00" },
  });
  await c().post(`${ctx.ws}/campaigns/${id}/triggers`, {
    type: "date_anniversary",
    config: { field: "attributes.signedUp", offsetDays: 1, time: "00:00" },
  });
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const today = await contact({
    email: "bday@example.com",
    timezone: "UTC",
    attributes: { birthday: `1990-${day(0)}` },
  });
  const other = await contact({ email: "nobday@example.com", attributes: { birthday: `1990-${day(3)}` } });
  const dayAfter = await contact({
    email: "signup@example.com",
    attributes: { signedUp: `2024-${day(1)}T10:00:00Z` },
  });

  await app.broker.call("campaigns.processDue", {});
  await app.broker.call("campaigns.processDue", {});
  const enrolled = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data.map(
    (e: { contactId: string }) => e.contactId,
  );
  expect(enrolled.sort()).toEqual([today, dayAfter].sort());
  expect(enrolled).not.toContain(other);
});

test("completing or archiving a campaign exits its live enrollments", async () => {
  const wait = {
    nodes: [
      { id: "entry", type: "entry", config: {} },
      { id: "w", type: "wait", config: { duration: "P1D" } },
    ],
    edges: [{ from: "entry", to: "w" }],
  };
  for (const end of ["completed", "archived"] as const) {
    const id = await campaignWith(wait, `Ends ${end}`);
    await c().post(`${ctx.ws}/campaigns/${id}/execute`);
    const who = await contact({ email: `ends-${end}@example.com` });
    await c().post(`${ctx.ws}/campaigns/${id}/enroll`, { contactId: who });
    await c().patch(`${ctx.ws}/campaigns/${id}`, { status: "paused" });
    expect((await c().patch(`${ctx.ws}/campaigns/${id}`, { status: end })).body.status).toBe(end);
    const [enrollment] = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
    expect(enrollment).toMatchObject({ status: "exited", exitReason: `campaign_${end}` });
  }
});

test("crash safety: a step whose runner died after queueing its send is finished by the next claim without a second message", async () => {
  const id = await campaignWith(
    {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "send", type: "send", config: { channel: "email", templateId } },
        { id: "w", type: "wait", config: { duration: "P1D" } },
      ],
      edges: [
        { from: "entry", to: "send" },
        { from: "send", to: "w" },
      ],
    },
    "Crashy",
  );
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const who = await contact({ email: "crash@example.com", firstName: "Cy" });
  // A runner took the enrollment (its lease ends in half a second), passed the entry, queued the send, and died.
  const sequelize = await database();
  const [[row]] = (await sequelize.query(
    `INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, current_node_id, run_at)
     VALUES (gen_random_uuid()::text, $1, $2, $3, 1, 'active', 'send', now() + interval '500 milliseconds') RETURNING id`,
    { bind: [ctx.workspaceId, id, who] },
  )) as unknown as [[{ id: string }]];
  await app.broker.call(
    "messages.enqueue",
    {
      channel: "email",
      templateId,
      contactIds: [who],
      messageIds: [derivedMessageId(row.id, "send")],
      campaignId: id,
      enrollmentId: row.id,
    },
    { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
  );

  const waiting = await waitFor(async () => {
    const [e] = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
    return e?.status === "waiting" ? e : undefined;
  }, 10_000);
  expect(waiting).toMatchObject({ id: row.id, currentNodeId: "w" });
  const messages = (await c().get(`${ctx.ws}/messages?campaignId=${id}`)).body.data;
  expect(messages).toHaveLength(1);
  expect(messages[0].id).toBe(derivedMessageId(row.id, "send"));
  const [sendLog] = (await c().get(`${ctx.ws}/campaigns/${id}/logs?nodeId=send`)).body.data;
  expect(sendLog.detail).toBe(`message ${derivedMessageId(row.id, "send")} queued by an earlier try`);
});

test("a segment entry made while the campaigns service is down enrolls once it is back (the membership log is durable)", async () => {
  const list = await c().post(`${ctx.ws}/segments`, { name: "Restart list", type: "static" });
  const id = await campaignWith(
    {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "w", type: "wait", config: { duration: "P1D" } },
      ],
      edges: [{ from: "entry", to: "w" }],
    },
    "Survives restarts",
  );
  await c().post(`${ctx.ws}/campaigns/${id}/triggers`, {
    type: "segment_entered",
    config: { segmentId: list.body.id },
  });
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const who = await contact({ email: "restart@example.com" });
  const sequelize = await database();
  const enrolled = async () =>
    (
      (await sequelize.query(`SELECT count(*)::int AS n FROM campaign_enrollments WHERE campaign_id = $1`, {
        bind: [id],
        type: QueryTypes.SELECT,
      })) as Array<{ n: number }>
    )[0].n;

  await app.broker.destroyService(app.broker.getLocalService("campaigns")!);
  expect((await c().post(`${ctx.ws}/segments/${list.body.id}/members`, { contactIds: [who] })).status).toBe(
    200,
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await enrolled()).toBe(0);

  const schema = (await import("../../../services/campaigns/campaigns.service")).default;
  app.broker.createService(schema as unknown as Parameters<typeof app.broker.createService>[0]);
  await app.broker.waitForServices(["campaigns"]);
  await waitFor(async () => ((await enrolled()) === 1 ? true : undefined), 10_000);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await enrolled()).toBe(1);
});

test("the dry-run takes the path the real run takes; re-entry always and cooldown; a trigger's PATCH merges", async () => {
  const id = await campaignWith(
    {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        {
          id: "vip",
          type: "condition",
          config: {
            filter: { match: "all", conditions: [{ field: "tags", operator: "contains", value: "gold" }] },
          },
        },
        {
          id: "split",
          type: "random_split",
          config: {
            branches: [
              { id: "left", weight: 50 },
              { id: "right", weight: 50 },
            ],
          },
        },
        { id: "tagL", type: "update_contact", config: { addTags: ["left"] } },
        { id: "tagR", type: "update_contact", config: { addTags: ["right"] } },
        { id: "out", type: "exit", config: {} },
      ],
      edges: [
        { from: "entry", to: "vip" },
        { from: "vip", to: "out", branch: "no" },
        { from: "vip", to: "split", branch: "yes" },
        { from: "split", to: "tagL", branch: "left" },
        { from: "split", to: "tagR", branch: "right" },
      ],
    },
    "Same path",
  );
  const trigger = await c().post(`${ctx.ws}/campaigns/${id}/triggers`, {
    type: "event",
    config: { eventType: "ping" },
    reentry: "always",
  });
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const who = await contact({ email: "samepath@example.com", tags: ["gold"] });

  await c().post(`${ctx.ws}/events`, { type: "ping", contactId: who });
  const [first] = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
  await finished(id, first.id);
  const real = (await c().get(`${ctx.ws}/campaigns/${id}/logs?enrollmentId=${first.id}`)).body.data
    .reverse()
    .map((l: { nodeId: string; branch: string | null }) => [l.nodeId, l.branch]);
  // The dry-run's random split is keyed by a dry-run enrollment; it names the same nodes up to the split.
  const dry = (await c().post(`${ctx.ws}/campaigns/${id}/dry-run`, { contactId: who })).body.path.map(
    (p: { nodeId: string; branch: string | null }) => [p.nodeId, p.branch],
  );
  expect(dry.slice(0, 3).map((p: unknown[]) => p[0])).toEqual(["entry", "vip", "split"]);
  expect(real.slice(0, 3)).toEqual(dry.slice(0, 2).concat([real[2]]));
  expect(dry[1]).toEqual(["vip", "yes"]);

  // always: a second ping, once the first enrollment ended, enrolls again.
  await c().post(`${ctx.ws}/events`, { type: "ping", contactId: who });
  expect((await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data).toHaveLength(2);

  // cooldown: within the hours no new enrollment; the merge keeps the config.
  const patched = await c().patch(`${ctx.ws}/campaigns/${id}/triggers/${trigger.body.id}`, {
    reentry: "cooldown",
    cooldownHours: 24,
  });
  expect(patched.body).toMatchObject({
    type: "event",
    config: { eventType: "ping" },
    reentry: "cooldown",
    cooldownHours: 24,
  });
  const all = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
  await Promise.all(all.map((e: { id: string }) => finished(id, e.id)));
  await c().post(`${ctx.ws}/events`, { type: "ping", contactId: who });
  expect((await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data).toHaveLength(2);
  expect((await c().get(`${ctx.ws}/campaigns/${id}/triggers`)).body).toHaveLength(1);
});

test("races: an event does not resume a wait a runner holds, and a step saved after a goal leaves the enrollment completed", async () => {
  const id = await campaignWith(
    {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "reply", type: "wait", config: { event: { type: "answer" }, timeout: "P1D" } },
        { id: "yes", type: "exit", config: {} },
        { id: "no", type: "exit", config: {} },
        { id: "won", type: "goal", config: { event: "bought" } },
      ],
      edges: [
        { from: "entry", to: "reply" },
        { from: "reply", to: "yes", branch: "event" },
        { from: "reply", to: "no", branch: "timeout" },
      ],
    },
    "Races",
  );
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const who = await contact({ email: "races@example.com" });
  const enrolled = (await c().post(`${ctx.ws}/campaigns/${id}/enroll`, { contactId: who })).body;
  await waitFor(async () => {
    const [e] = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
    return e.status === "waiting" ? e : undefined;
  }, 10_000);
  const sequelize = await database();
  // A runner took it at its timeout: its run_at is now the lease's end.
  await sequelize.query(`UPDATE campaign_enrollments SET run_at = now() + interval '1 hour' WHERE id = $1`, {
    bind: [enrolled.id],
  });
  await c().post(`${ctx.ws}/events`, { type: "answer", contactId: who });
  const [held] = (await sequelize.query(
    `SELECT next_branch, run_at > now() AS leased FROM campaign_enrollments WHERE id = $1`,
    {
      bind: [enrolled.id],
      type: QueryTypes.SELECT,
    },
  )) as Array<{ next_branch: string | null; leased: boolean }>;
  expect(held).toEqual({ next_branch: null, leased: true });

  // The goal completes it; the holder's late save does not bring it back.
  await c().post(`${ctx.ws}/events`, { type: "bought", contactId: who });
  const [row] = (await sequelize.query(`SELECT * FROM campaign_enrollments WHERE id = $1`, {
    bind: [enrolled.id],
    type: QueryTypes.SELECT,
  })) as EnrollmentRow[];
  expect(row.status).toBe("completed");
  await saveSteps([
    {
      e: row,
      next: { status: "active", currentNodeId: "no", runAt: new Date() },
      logs: [{ nodeId: "reply", outcome: "branched", branch: "timeout", detail: "timed out" }],
    },
  ]);
  const [after] = (await c().get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
  expect(after).toMatchObject({ status: "completed", exitReason: "goal" });
});
