import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace, signUp } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/**
 * Forms through the gateway against real PostgreSQL: definitions checked
 * with their paths, submissions (JSON and form posts) that find or create
 * the contact, keep proof of consent, record `form.submitted` with exactly
 * one webhook delivery of the spec's payload, the honeypot, the rate limit,
 * double opt-in through the confirm link, the hosted page and analytics.
 */

let app: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "events",
      "segments",
      "templates",
      "messages",
      "webhooks",
      "campaigns",
      "forms",
    ],
    env: { MESSAGE_POLL_MS: "50", WEBHOOK_POLL_MS: "100" },
  });
  receiver = await startReceiver();
  ctx = await ownerWithWorkspace(app.baseUrl);
  await c().patch(ctx.ws, {
    settings: {
      sender: { fromName: "Acme", fromEmail: "news@acme.test" },
      allowedOrigins: ["https://www.acme.test"],
    },
  });
});

afterAll(async () => {
  await app?.stop();
  await receiver?.close();
});

const c = () => ctx.owner.client;
const visitor = () => new HttpClient(app.baseUrl);

const NEWSLETTER = {
  name: "Newsletter",
  fields: [
    { key: "email", label: "Email", type: "email", required: true, mapTo: "email" },
    { key: "first", label: "First name", type: "text", mapTo: "firstName" },
    { key: "plan", label: "Plan", type: "select", options: ["free", "pro"], mapTo: "attributes.plan" },
    { key: "seats", label: "Seats", type: "number", validation: { min: 1, max: 500 } },
    {
      key: "news",
      label: "Yes, send me the monthly newsletter by email",
      type: "consent",
      mapTo: "consent.email",
    },
    { key: "utm_source", label: "Source", type: "hidden", defaultValue: "direct" },
  ],
  settings: { successMessage: "Thanks, you are in." },
};

async function form(body: Record<string, unknown> = NEWSLETTER) {
  const res = await c().post(`${ctx.ws}/forms`, body);
  expect(res.status).toBe(201);
  return res.body as { id: string } & Record<string, any>;
}

test("definitions: fields checked with their paths, redirects held to allowed origins; list, get, PUT replaces, delete", async () => {
  const bad = await c().post(`${ctx.ws}/forms`, {
    name: "Bad",
    fields: [
      { key: "email", label: "Email", type: "email", mapTo: "email" },
      { key: "email", label: "Again", type: "text", mapTo: "email" },
      { key: "size", label: "Size", type: "select" },
      { key: "ok", label: "OK", type: "consent", mapTo: "firstName" },
      { key: "owner", label: "Owner", type: "text", mapTo: "ownerId" },
    ],
    settings: { redirectUrl: "https://evil.example/thanks" },
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details.map((d: { field: string }) => d.field)).toEqual([
    "fields[1].key",
    "fields[1].mapTo",
    "fields[2].options",
    "fields[3].mapTo",
    "fields[4].mapTo",
    "settings.redirectUrl",
  ]);
  const badKey = await c().post(`${ctx.ws}/forms`, {
    name: "Bad key",
    fields: [{ key: "_hp", label: "x", type: "text" }],
  });
  expect(badKey.status).toBe(400);
  expect(badKey.body.details[0].field).toBe("fields[0].key");

  const made = await form({ ...NEWSLETTER, name: "Alpha list" });
  expect(made).toMatchObject({
    name: "Alpha list",
    active: true,
    settings: { submitLabel: "Submit", successMessage: "Thanks, you are in.", doubleOptIn: false },
  });
  const other = await form({ ...NEWSLETTER, name: "Beta list", active: false });
  const searched = await c().get(`${ctx.ws}/forms?search=alpha`);
  expect(searched.body.data.map((f: { id: string }) => f.id)).toEqual([made.id]);
  const inactive = await c().get(`${ctx.ws}/forms?active=false&sort=name&limit=1`);
  expect(inactive.body).toMatchObject({ data: [{ id: other.id }], pagination: { limit: 1, total: 1 } });
  expect((await c().get(`${ctx.ws}/forms?sort=colour`)).status).toBe(400);

  const replaced = await c().put(`${ctx.ws}/forms/${made.id}`, {
    name: "Alpha list",
    fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
    settings: { submitLabel: "Join", redirectUrl: "https://www.acme.test/welcome" },
  });
  expect(replaced.status).toBe(200);
  expect(replaced.body.fields).toHaveLength(1);
  expect(replaced.body.settings).toMatchObject({ submitLabel: "Join", successMessage: "Thank you." });
  expect((await c().get(`${ctx.ws}/forms/${made.id}`)).body.settings.redirectUrl).toBe(
    "https://www.acme.test/welcome",
  );

  // A viewer reads but does not write; another workspace sees nothing.
  const stranger = await ownerWithWorkspace(app.baseUrl);
  expect((await stranger.owner.client.get(`${stranger.ws}/forms/${made.id}`)).status).toBe(404);
  expect((await stranger.owner.client.get(`${ctx.ws}/forms/${made.id}`)).status).toBe(403);

  expect((await c().delete(`${ctx.ws}/forms/${other.id}`)).body).toEqual({ success: true });
  expect((await c().get(`${ctx.ws}/forms/${other.id}`)).status).toBe(404);
  expect((await c().delete(`${ctx.ws}/forms/${other.id}`)).status).toBe(404);
});

test("a JSON submission finds or creates the contact, keeps proof of consent, and gives one form.submitted delivery", async () => {
  const hook = await c().post(`${ctx.ws}/webhooks`, {
    name: "forms",
    url: receiver.url("/forms"),
    events: ["form.submitted"],
  });
  expect(hook.status).toBe(201);
  const f = await form();
  const known = await c().post(`${ctx.ws}/contacts`, {
    email: "ann@example.com",
    firstName: "Ann",
    lastName: "Lee",
  });

  const res = await visitor().post(
    `/api/forms/${f.id}/submit`,
    {
      email: "ann@example.com",
      first: "",
      plan: "pro",
      seats: "3",
      news: true,
      pageUrl: "https://www.acme.test/join",
    },
    { headers: { "user-agent": "FormTest/1.0" } },
  );
  expect(res.status).toBe(201);
  expect(res.body).toEqual({
    submissionId: expect.any(String),
    contactId: known.body.id,
    message: "Thanks, you are in.",
    redirectUrl: null,
    visitorToken: expect.stringMatching(/^ey/),
  });

  // The blank first name left the known one alone; the plan and the consent were written.
  const contact = (await c().get(`${ctx.ws}/contacts/${known.body.id}`)).body;
  expect(contact).toMatchObject({ firstName: "Ann", lastName: "Lee", attributes: { plan: "pro" } });
  expect(contact.consent.email).toMatchObject({ status: "opted_in", source: "form" });

  const submissions = (await c().get(`${ctx.ws}/forms/${f.id}/submissions`)).body;
  expect(submissions.data).toEqual([
    {
      id: res.body.submissionId,
      formId: f.id,
      contactId: known.body.id,
      fields: { email: "ann@example.com", plan: "pro", seats: 3, news: true, utm_source: "direct" },
      pageUrl: "https://www.acme.test/join",
      consent: [
        { channel: "email", text: "Yes, send me the monthly newsletter by email", status: "opted_in" },
      ],
      ip: expect.any(String),
      userAgent: "FormTest/1.0",
      createdAt: expect.any(String),
    },
  ]);

  const events = (await c().get(`${ctx.ws}/events?type=form.submitted&contactId=${known.body.id}`)).body;
  expect(events).toMatchObject([
    { type: "form.submitted", metadata: { formId: f.id, submissionId: res.body.submissionId } },
  ]);

  const deliveries = await waitFor(async () => {
    const got = receiver.received.filter((r) => r.path === "/forms");
    return got.length ? got : undefined;
  }, 10_000);
  await new Promise((r) => setTimeout(r, 500));
  expect(receiver.received.filter((r) => r.path === "/forms")).toHaveLength(1);
  expect(JSON.parse(deliveries[0].body)).toMatchObject({
    event: "form.submitted",
    data: {
      formId: f.id,
      submissionId: res.body.submissionId,
      fields: { email: "ann@example.com", plan: "pro", seats: 3, news: true, utm_source: "direct" },
    },
  });
  expect(Object.keys(JSON.parse(deliveries[0].body).data).sort()).toEqual([
    "fields",
    "formId",
    "submissionId",
  ]);

  // A new address creates its contact.
  const fresh = await visitor().post(`/api/forms/${f.id}/submit`, { email: "new@example.com", first: "Neo" });
  expect(fresh.status).toBe(201);
  expect((await c().get(`${ctx.ws}/contacts/${fresh.body.contactId}`)).body).toMatchObject({
    email: "new@example.com",
    firstName: "Neo",
  });
});

test("bad input is a 400 naming the key; inactive 403; unknown 404; the honeypot stores nothing; ten a minute per address", async () => {
  const f = await form();
  const v = visitor();
  const bad = await v.post(`/api/forms/${f.id}/submit`, {
    email: "not-an-address",
    plan: "gold",
    seats: "9000",
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details).toEqual([
    { field: "email", message: "must be an email address" },
    { field: "plan", message: "must be one of free, pro" },
    { field: "seats", message: "must be at most 500" },
  ]);
  expect((await v.post(`/api/forms/${f.id}/submit`, { first: "No email" })).body.details).toEqual([
    { field: "email", message: "is required" },
  ]);
  expect((await v.post(`/api/forms/nope/submit`, { email: "a@example.com" })).status).toBe(404);

  const robot = await v.post(`/api/forms/${f.id}/submit`, { email: "bot@example.com", _hp: "http://spam" });
  expect(robot.status).toBe(201);
  expect(robot.body.contactId).toBeNull();
  expect((await c().get(`${ctx.ws}/forms/${f.id}/submissions`)).body.data).toEqual([]);
  expect((await c().get(`${ctx.ws}/contacts?search=bot@example.com`)).body.data).toEqual([]);

  // Three so far (the unknown form counts for nothing); seven more within the minute make ten; the eleventh waits.
  for (let i = 0; i < 7; i++)
    expect((await v.post(`/api/forms/${f.id}/submit`, { email: `p${i}@example.com` })).status).toBe(201);
  const limited = await v.post(`/api/forms/${f.id}/submit`, { email: "late@example.com" });
  expect(limited.status).toBe(429);
  expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  expect((await visitor().post(`/api/forms/${f.id}/submit`, { email: "other@example.com" })).status).toBe(
    201,
  );

  await c().put(`${ctx.ws}/forms/${f.id}`, { ...NEWSLETTER, active: false });
  expect((await visitor().post(`/api/forms/${f.id}/submit`, { email: "x@example.com" })).status).toBe(403);
  // A site outside the workspace's allowed origins may not post it.
  await c().put(`${ctx.ws}/forms/${f.id}`, NEWSLETTER);
  const foreign = await visitor().post(
    `/api/forms/${f.id}/submit`,
    { email: "x@example.com" },
    { headers: { origin: "https://evil.example" } },
  );
  expect(foreign.status).toBe(403);
  const allowed = await visitor().post(
    `/api/forms/${f.id}/submit`,
    { email: "y@example.com" },
    { headers: { origin: "https://www.acme.test" } },
  );
  expect(allowed.status).toBe(201);
  expect(allowed.headers.get("access-control-allow-origin")).toBe("https://www.acme.test");
});

test("concurrent submissions, written together: each gets its own contact (one for the same address twice) or its own 400", async () => {
  const f = await form();
  const known = await c().post(`${ctx.ws}/contacts`, { email: "known@example.com", firstName: "Kay" });
  const emails = [
    ...Array.from({ length: 12 }, (_, i) => `burst-${i}@example.com`),
    "twice@example.com",
    "twice@example.com",
    "known@example.com",
  ];
  const [answers, refused] = await Promise.all([
    Promise.all(emails.map((email) => visitor().post(`/api/forms/${f.id}/submit`, { email, first: "" }))),
    visitor().post(`/api/forms/${f.id}/submit`, { email: "burst@" }),
  ]);
  expect(answers.map((a) => a.status)).toEqual(emails.map(() => 201));
  expect(refused.status).toBe(400);
  expect(refused.body.details).toEqual([{ field: "email", message: "must be an email address" }]);
  // The same address twice is one contact; a known one is found, its name kept (a blank answer empties nothing).
  expect(answers[12].body.contactId).toBe(answers[13].body.contactId);
  expect(answers[14].body.contactId).toBe(known.body.id);
  expect((await c().get(`${ctx.ws}/contacts/${known.body.id}`)).body.firstName).toBe("Kay");
  expect(new Set(answers.map((a) => a.body.submissionId)).size).toBe(emails.length);
  const contacts = new Set(answers.map((a) => a.body.contactId));
  expect(contacts.size).toBe(14);
  for (let i = 0; i < 12; i++) {
    const contact = await c().get(`${ctx.ws}/contacts/${answers[i].body.contactId}`);
    expect(contact.body.email).toBe(emails[i]);
  }
  const stored = await c().get(`${ctx.ws}/forms/${f.id}/submissions?limit=100`);
  expect(stored.body.data).toHaveLength(emails.length);

  // A value the contact refuses fails its own submission, named by the form's key; the rest of its batch is written.
  const withPhone = await form({
    name: "Call me",
    fields: [
      { key: "email", label: "Email", type: "email", required: true, mapTo: "email" },
      { key: "tel", label: "Phone", type: "text", mapTo: "phone" },
    ],
  });
  const mixed = await Promise.all([
    visitor().post(`/api/forms/${withPhone.id}/submit`, { email: "call-1@example.com", tel: "+14155550123" }),
    visitor().post(`/api/forms/${withPhone.id}/submit`, {
      email: "call-2@example.com",
      tel: "no phone at all",
    }),
    visitor().post(`/api/forms/${withPhone.id}/submit`, { email: "call-3@example.com" }),
  ]);
  expect(mixed.map((m) => m.status)).toEqual([201, 400, 201]);
  expect(mixed[1].body.details.map((d: { field: string }) => d.field)).toEqual(["tel"]);
  expect((await c().get(`${ctx.ws}/contacts/${mixed[0].body.contactId}`)).body.phone).toBe("+14155550123");
  expect((await c().get(`${ctx.ws}/contacts?search=call-2@example.com`)).body.data).toEqual([]);
  for (const s of stored.body.data)
    expect(s.contactId).toBe(answers[answers.findIndex((a) => a.body.submissionId === s.id)].body.contactId);
});

test("form posts: 303 to the redirect, a thank-you page without one, the form again with its errors", async () => {
  const plain = await form();
  const v = visitor();
  const thanked = await v.request("POST", `/api/forms/${plain.id}/submit`, {
    form: { email: "post@example.com", first: "<b>Bo</b>", news: "on" },
  });
  expect(thanked.status).toBe(201);
  expect(thanked.headers.get("content-type")).toMatch(/text\/html/);
  expect(thanked.text).toContain("Thanks, you are in.");

  const refused = await v.request("POST", `/api/forms/${plain.id}/submit`, {
    form: { email: "nope", first: "<script>alert(1)</script>" },
  });
  expect(refused.status).toBe(400);
  expect(refused.text).toContain("must be an email address");
  expect(refused.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
  expect(refused.text).not.toContain("<script>alert(1)</script>");

  const redirecting = await form({
    ...NEWSLETTER,
    name: "Redirecting",
    settings: { redirectUrl: "https://www.acme.test/thanks" },
  });
  const moved = await v.request("POST", `/api/forms/${redirecting.id}/submit`, {
    form: { email: "moved@example.com" },
  });
  expect(moved.status).toBe(303);
  expect(moved.headers.get("location")).toBe("https://www.acme.test/thanks");
});

test("double opt-in: consent waits for the confirm link, which opts in with source form and leads to the form's page", async () => {
  const f = await form({
    ...NEWSLETTER,
    name: "Confirmed list",
    settings: { doubleOptIn: true, confirmRedirectUrl: "https://www.acme.test/confirmed" },
  });
  const res = await visitor().post(`/api/forms/${f.id}/submit`, { email: "dana@example.com", news: true });
  expect(res.status).toBe(201);
  const contactId = res.body.contactId;
  expect((await c().get(`${ctx.ws}/contacts/${contactId}`)).body.consent.email?.status ?? "unknown").toBe(
    "unknown",
  );
  const [submission] = (await c().get(`${ctx.ws}/forms/${f.id}/submissions`)).body.data;
  expect(submission.consent).toEqual([
    {
      channel: "email",
      text: "Yes, send me the monthly newsletter by email",
      status: "pending_confirmation",
    },
  ]);

  const mail = await waitFor(async () => {
    const [m] = (await c().get(`${ctx.ws}/messages?contactId=${contactId}`)).body.data;
    return m?.status === "sent" ? m : undefined;
  }, 10_000);
  const detail = (await c().get(`${ctx.ws}/messages/${mail.id}`)).body;
  expect(detail.content.subject).toBe("Please confirm your subscription to Acme");
  const link = /href="([^"]+\/api\/preferences\/confirm\?token=[^"]+)"/.exec(detail.content.html)![1];
  const confirm = await visitor().get(
    new URL(link.replace(/&amp;/g, "&")).pathname + new URL(link.replace(/&amp;/g, "&")).search,
  );
  expect(confirm.status).toBe(302);
  expect(confirm.headers.get("location")).toBe("https://www.acme.test/confirmed");
  expect((await c().get(`${ctx.ws}/contacts/${contactId}`)).body.consent.email).toMatchObject({
    status: "opted_in",
    source: "form",
  });
});

test("the hosted page and the embed count views; analytics by day with conversion", async () => {
  const f = await form({ ...NEWSLETTER, name: "Counted" });
  const page = await visitor().get(`/f/${f.id}`);
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toMatch(/text\/html/);
  expect(page.text).toContain(`action="/api/forms/${f.id}/submit"`);
  expect(page.text).toContain('name="_hp"');
  const embed = await visitor().get(`/api/forms/${f.id}/embed`);
  expect(embed.status).toBe(200);
  expect(embed.headers.get("content-type")).toMatch(/javascript/);
  expect(embed.text).toContain("cmsForms.enhance");
  expect((await visitor().get(`/f/missing`)).status).toBe(404);

  await visitor().post(`/api/forms/${f.id}/submit`, { email: "counted@example.com" });
  const today = new Date().toISOString().slice(0, 10);
  const analytics = (await c().get(`${ctx.ws}/forms/${f.id}/analytics`)).body;
  expect(analytics).toMatchObject({ views: 2, submissions: 1, conversionRate: 0.5 });
  expect(analytics.points).toHaveLength(30);
  expect(analytics.points.at(-1)).toEqual({ date: today, views: 2, submissions: 1 });
  const ranged = (await c().get(`${ctx.ws}/forms/${f.id}/analytics?from=2026-01-01&to=2026-01-03`)).body;
  expect(ranged).toEqual({
    views: 0,
    submissions: 0,
    conversionRate: 0,
    points: [
      { date: "2026-01-01", views: 0, submissions: 0 },
      { date: "2026-01-02", views: 0, submissions: 0 },
      { date: "2026-01-03", views: 0, submissions: 0 },
    ],
  });
  expect((await c().get(`${ctx.ws}/forms/${f.id}/analytics?from=2026-02-01&to=2026-01-01`)).status).toBe(400);
  const later = (await c().get(`${ctx.ws}/forms/${f.id}/submissions?from=2099-01-01T00:00:00Z`)).body;
  expect(later.data).toEqual([]);
});

test("a submission runs the events chain: a form_submitted trigger has enrolled the contact when the answer comes", async () => {
  const f = await form({ ...NEWSLETTER, name: "Journey form" });
  const other = await form({ ...NEWSLETTER, name: "Another form" });
  const campaign = await c().post(`${ctx.ws}/campaigns`, {
    name: "Welcome from the form",
    workflow: {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "w", type: "wait", config: { duration: "P1D" } },
      ],
      edges: [{ from: "entry", to: "w" }],
    },
  });
  await c().post(`${ctx.ws}/campaigns/${campaign.body.id}/triggers`, {
    type: "form_submitted",
    config: { formId: f.id },
  });
  expect((await c().post(`${ctx.ws}/campaigns/${campaign.body.id}/execute`)).status).toBe(200);
  await visitor().post(`/api/forms/${other.id}/submit`, { email: "elsewhere@example.com" });
  const res = await visitor().post(`/api/forms/${f.id}/submit`, { email: "journey@example.com" });
  const enrollments = (await c().get(`${ctx.ws}/campaigns/${campaign.body.id}/enrollments`)).body.data;
  expect(enrollments).toMatchObject([{ contactId: res.body.contactId }]);
});

test("a viewer reads forms but cannot write them", async () => {
  const member = await signUp(app.baseUrl, "Viewer");
  const invited = await c().post(`${ctx.ws}/members`, { email: member.email, role: "VIEWER" });
  expect([200, 201]).toContain(invited.status);
  expect((await member.client.get(`${ctx.ws}/forms`)).status).toBe(200);
  expect((await member.client.post(`${ctx.ws}/forms`, NEWSLETTER)).status).toBe(403);
});
