import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** Focus items through the gateway: triggers and rules checked, references held to the workspace, PATCH merges. */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "segments", "forms", "content"],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
});

const c = () => ctx.owner.client;

test("create, list, get, PATCH merges, delete; triggers and references are checked with their fields", async () => {
  const form = await c().post(`${ctx.ws}/forms`, {
    name: "Newsletter",
    fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
  });
  const segment = await c().post(`${ctx.ws}/segments`, { name: "Visitors", type: "static" });
  const created = await c().post(`${ctx.ws}/focus-items`, {
    name: "Exit offer",
    type: "modal",
    content: "<p>Wait! 10% off</p>",
    formId: form.body.id,
    trigger: { on: "exit_intent" },
    rules: { urls: ["/pricing"], frequency: { maxViews: 1, perDays: 7 }, segmentId: segment.body.id },
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    name: "Exit offer",
    type: "modal",
    formId: form.body.id,
    trigger: { on: "exit_intent", value: null },
    rules: { urls: ["/pricing"], frequency: { maxViews: 1, perDays: 7 }, segmentId: segment.body.id },
    active: true,
    views: 0,
    conversions: 0,
  });
  const bar = await c().post(`${ctx.ws}/focus-items`, {
    name: "Top bar",
    type: "bar",
    content: "<p>Free shipping</p>",
    trigger: { on: "scroll", value: 40 },
  });
  expect(bar.body).toMatchObject({ formId: null, rules: { urls: [], frequency: null, segmentId: null } });

  const bad = await c().post(`${ctx.ws}/focus-items`, {
    name: "Bad",
    type: "slide_in",
    content: "x",
    formId: "no-such-form",
    trigger: { on: "scroll", value: 150 },
    rules: { segmentId: "no-such-segment" },
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details).toEqual([
    { field: "trigger.value", message: "a scroll trigger needs the percent of the page (1-100)" },
    { field: "formId", message: "is not one of the workspace's" },
    { field: "rules.segmentId", message: "is not one of the workspace's" },
  ]);
  const noDelay = await c().post(`${ctx.ws}/focus-items`, {
    name: "Bad",
    type: "bar",
    content: "x",
    trigger: { on: "delay" },
  });
  expect(noDelay.body.details).toEqual([
    { field: "trigger.value", message: "a delay trigger needs its seconds (1-3600)" },
  ]);
  expect(
    (
      await c().post(`${ctx.ws}/focus-items`, {
        name: "Bad",
        type: "popup",
        content: "x",
        trigger: { on: "load" },
      })
    ).status,
  ).toBe(400);

  // Another workspace's form is not this one's.
  const stranger = await ownerWithWorkspace(app.baseUrl);
  const theirs = await stranger.owner.client.post(`${stranger.ws}/focus-items`, {
    name: "Borrowed",
    type: "bar",
    content: "x",
    formId: form.body.id,
    trigger: { on: "load" },
  });
  expect(theirs.status).toBe(400);
  expect((await stranger.owner.client.get(`${stranger.ws}/focus-items/${created.body.id}`)).status).toBe(404);

  const patched = await c().patch(`${ctx.ws}/focus-items/${created.body.id}`, {
    active: false,
    trigger: { on: "delay", value: 5 },
    formId: null,
  });
  expect(patched.status).toBe(200);
  expect(patched.body).toMatchObject({
    name: "Exit offer",
    content: "<p>Wait! 10% off</p>",
    active: false,
    formId: null,
    trigger: { on: "delay", value: 5 },
    rules: { urls: ["/pricing"] },
  });
  expect(
    (await c().patch(`${ctx.ws}/focus-items/${bar.body.id}`, { trigger: { on: "load", value: 3 } })).status,
  ).toBe(400);

  const active = (await c().get(`${ctx.ws}/focus-items?active=true`)).body;
  expect(active).toMatchObject({ data: [{ id: bar.body.id }], pagination: { total: 1 } });
  expect(
    (await c().get(`${ctx.ws}/focus-items?type=modal`)).body.data.map((f: { id: string }) => f.id),
  ).toEqual([created.body.id]);
  expect((await c().get(`${ctx.ws}/focus-items/${bar.body.id}`)).body.name).toBe("Top bar");
  expect((await c().delete(`${ctx.ws}/focus-items/${bar.body.id}`)).body).toEqual({ success: true });
  expect((await c().get(`${ctx.ws}/focus-items/${bar.body.id}`)).status).toBe(404);
});
