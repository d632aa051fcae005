import { filedAfter } from "../../helpers/inbound";
import { Client } from "pg";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { graphApi } from "../../helpers/chat-fakes";
import { hubSignature } from "../../helpers/provider-signatures";
import { startReceiver } from "../../helpers/receiver";

/**
 * chatapp2 (WhatsApp Cloud API wire) through the gateway, against a local
 * fake of the Graph API that records every request: connecting checks the
 * token; the webhook handshake; signed callbacks (inbound messages open the
 * 24-hour window, statuses move messages); templates synced across pages;
 * template and free-form sends checked before queueing; a STOP; a campaign
 * send node with template content.
 */

const PHONE_ID = "1098765";
const WABA_ID = "2233445";
const TOKEN = "EAAG-good-token";
const APP_SECRET = "meta-app-secret";
const VERIFY_TOKEN = "paste-me-into-meta";
const ANA = "+447700900123";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let graph: Awaited<ReturnType<typeof startReceiver>>;
let providerId: string;

const template = (name: string, language: string, status: string, body: string) => ({
  name,
  language,
  status,
  category: "UTILITY",
  id: `${name}-${language}`,
  components: [
    { type: "HEADER", format: "TEXT", text: "Acme" },
    { type: "BODY", text: body },
  ],
});

/** The Graph API with the account's templates on two pages. */
const graphFake = graphApi({
  accessToken: TOKEN,
  phoneNumberId: PHONE_ID,
  templates: {
    businessAccountId: WABA_ID,
    pages: [
      [
        template("order_update", "en_US", "APPROVED", "Hi {{1}}, order {{2}} has shipped."),
        template("promo", "en_US", "REJECTED", "Sale {{1}}"),
      ],
      [
        template("order_update", "es", "APPROVED", "Hola {{1}}, el pedido {{2}} ha salido."),
        template("welcome", "en_US", "APPROVED", "Welcome to Acme!"),
        template("draft", "en_US", "PENDING", "Soon {{1}}"),
      ],
    ],
    nextUrl: (after) => graph.url(`/v19.0/${WABA_ID}/message_templates?limit=100&after=${after}`),
  },
});

beforeAll(async () => {
  graph = await startReceiver(graphFake.answer);
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
      "campaigns",
      "providers",
    ],
    env: { PUBLIC_URL: "https://cms.example.test", MESSAGE_POLL_MS: "50", CAMPAIGN_POLL_MS: "50" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
  await graph?.close();
});

const config = (over: Record<string, unknown> = {}) => ({
  phoneNumberId: PHONE_ID,
  businessAccountId: WABA_ID,
  accessToken: TOKEN,
  appSecret: APP_SECRET,
  verifyToken: VERIFY_TOKEN,
  baseUrl: graph.url("/v19.0"),
  ...over,
});

const sends = () => graph.received.filter((r) => r.path === `/v19.0/${PHONE_ID}/messages`);
const message = async (id: string) => (await ctx.owner.client.get(`${ctx.ws}/messages/${id}`)).body;
const settled = (id: string, status: string) =>
  waitFor(
    async () => ((await message(id)).status === status ? message(id) : undefined),
    10_000,
    `message ${status}`,
  );

/** A callback as Meta posts it: the exact body signed with the app secret (or another one). */
function postCallback(value: Record<string, unknown>, secret: string | null = APP_SECRET) {
  const body = JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      { id: WABA_ID, changes: [{ field: "messages", value: { messaging_product: "whatsapp", ...value } }] },
    ],
  });
  const signature = secret && hubSignature(secret, body);
  return filedAfter(
    app,
    app.http().request("POST", `/api/providers/chatapp2/webhooks?providerId=${providerId}`, {
      raw: body,
      headers: {
        "content-type": "application/json",
        ...(signature ? { "x-hub-signature-256": signature } : {}),
      },
    }),
  );
}

const inbound = (from: string, id: string, text: string, secret: string | null = APP_SECRET) =>
  postCallback(
    {
      metadata: { display_phone_number: "15550001111", phone_number_id: PHONE_ID },
      contacts: [{ profile: { name: "Ana" }, wa_id: from.slice(1) }],
      messages: [
        {
          from: from.slice(1),
          id,
          timestamp: String(Math.floor(Date.now() / 1000)),
          type: "text",
          text: { body: text },
        },
      ],
    },
    secret,
  );

const status = (id: string, state: string, errors?: unknown[]) =>
  postCallback({
    metadata: { display_phone_number: "15550001111", phone_number_id: PHONE_ID },
    statuses: [
      { id, status: state, timestamp: "1700000000", recipient_id: "447700900123", ...(errors && { errors }) },
    ],
  });

async function contact(phone: string, firstName: string) {
  const c = ctx.owner.client;
  const known = (await c.get(`${ctx.ws}/contacts?search=${encodeURIComponent(phone)}`)).body.data?.[0];
  const id = known?.id ?? (await c.post(`${ctx.ws}/contacts`, { phone, firstName })).body.id;
  await c.put(`${ctx.ws}/contacts/${id}/consent`, { channel: "chatapp2", status: "opted_in" });
  return id as string;
}

test("connecting checks the token with GET /{phoneNumberId}: a refused token is a 400 naming it, an unreachable API a 502", async () => {
  const c = ctx.owner.client;
  const bad = await c.post(`${ctx.ws}/providers/chatapp2`, {
    config: config({ accessToken: "EAAG-revoked" }),
  });
  expect([bad.status, bad.body.code, bad.body.details?.[0]?.field]).toEqual([
    400,
    "VALIDATION_ERROR",
    "config.accessToken",
  ]);
  expect(graph.received.at(-1)).toMatchObject({
    path: `/v19.0/${PHONE_ID}`,
    headers: expect.objectContaining({ authorization: "Bearer EAAG-revoked" }),
    body: "",
  });
  const unreachable = await c.post(`${ctx.ws}/providers/chatapp2`, {
    config: config({ baseUrl: "http://127.0.0.1:9/v19.0" }),
  });
  expect([unreachable.status, unreachable.body.code]).toEqual([502, "UPSTREAM_ERROR"]);
  const badId = await c.post(`${ctx.ws}/providers/chatapp2`, { config: config({ phoneNumberId: "12x" }) });
  expect([badId.status, badId.body.details?.[0]?.field]).toEqual([400, "config.phoneNumberId"]);
  expect((await c.get(`${ctx.ws}/providers/chatapp2`)).status).toBe(404);

  const created = await c.post(`${ctx.ws}/providers/chatapp2`, { config: config() });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    channel: "chatapp2",
    type: "chatapp2",
    config: {
      phoneNumberId: PHONE_ID,
      accessToken: "••••oken",
      appSecret: "••••cret",
      verifyToken: VERIFY_TOKEN,
    },
  });
  expect(JSON.stringify(created.body)).not.toContain(TOKEN);
  providerId = created.body.id;
  expect((await c.get(`${ctx.ws}/providers/chatapp2`)).body.id).toBe(providerId);
});

test("the webhook handshake answers the challenge as text only for the verify token", async () => {
  const path = (token: string, id = providerId) =>
    `/api/providers/chatapp2/webhooks?providerId=${id}&hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`;
  const ok = await app.http().request("GET", path(VERIFY_TOKEN));
  expect([ok.status, ok.text]).toEqual([200, "1158201444"]);
  expect(ok.headers.get("content-type")).toMatch(/^text\/plain/);
  const wrong = await app.http().request("GET", path("guess"));
  expect([wrong.status, wrong.body.code]).toEqual([403, "FORBIDDEN"]);
  expect((await app.http().request("GET", path(VERIFY_TOKEN, "no-such-provider"))).status).toBe(404);
});

test("every POST is signed: none or another secret is 401; an inbound text records chatapp2.message_received and opens the window", async () => {
  const c = ctx.owner.client;
  const unsigned = await inbound(ANA, "wamid.in0", "Hi", null);
  expect([unsigned.status, unsigned.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
  const body = JSON.stringify({ entry: [] });
  const forged = await app
    .http()
    .request("POST", `/api/providers/chatapp2/webhooks?providerId=${providerId}`, {
      raw: body,
      headers: {
        "content-type": "application/json",
        "x-hub-signature-256": hubSignature("not-the-secret", body),
      },
    });
  expect([forged.status, forged.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
  expect((await c.get(`${ctx.ws}/contacts?search=${encodeURIComponent(ANA)}`)).body.data).toEqual([]);

  // Outside the window (Ana never wrote): a free-form message is refused at once, naming the rule.
  const anaId = await contact(ANA, "Ana");
  const early = await c.post(`${ctx.ws}/messages`, {
    contactId: anaId,
    channel: "chatapp2",
    content: { text: "Hello?" },
  });
  expect([early.status, early.body.code]).toEqual([409, "INVALID_STATE"]);
  expect(early.body.error).toMatch(/24-hour customer service window/);

  const ok = await inbound(ANA, "wamid.in1", "Hi, is my order on its way?");
  expect([ok.status, ok.body]).toEqual([200, { received: true }]);
  expect((await inbound(ANA, "wamid.in1", "Hi, is my order on its way?")).status).toBe(200);
  const events = (await c.get(`${ctx.ws}/events?contactId=${anaId}&type=chatapp2.message_received`)).body;
  expect(events).toEqual([
    expect.objectContaining({
      type: "chatapp2.message_received",
      metadata: expect.objectContaining({
        providerId,
        from: ANA,
        to: "+15550001111",
        text: "Hi, is my order on its way?",
        providerMessageId: "wamid.in1",
      }),
    }),
  ]);

  // Inside the window: sent, exactly as the Cloud API takes a text.
  const reply = await c.post(`${ctx.ws}/messages`, {
    contactId: anaId,
    channel: "chatapp2",
    content: { text: "Yes, tomorrow!" },
  });
  expect(reply.status).toBe(202);
  const done = await settled(reply.body.id, "sent");
  expect(done).toMatchObject({
    providerType: "chatapp2",
    providerId,
    providerMessageId: expect.stringMatching(/^wamid\.out/),
  });
  const request = sends().at(-1)!;
  expect(request.headers).toMatchObject({
    authorization: `Bearer ${TOKEN}`,
    "content-type": "application/json",
  });
  expect(JSON.parse(request.body)).toEqual({
    messaging_product: "whatsapp",
    recipient_type: "individual",
    to: "447700900123",
    type: "text",
    text: { preview_url: false, body: "Yes, tomorrow!" },
  });

  // A day later the window has closed again, for transactional sends too (the provider's rule, not consent).
  const db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  try {
    await db.query(
      `UPDATE chatapp2_windows SET last_inbound_at = now() - interval '25 hours' WHERE workspace_id = $1 AND phone = $2`,
      [ctx.workspaceId, ANA],
    );
  } finally {
    await db.end();
  }
  const late = await c.post(`${ctx.ws}/messages`, {
    contactId: anaId,
    channel: "chatapp2",
    content: { text: "Anything else?" },
    transactional: true,
  });
  expect([late.status, late.body.code]).toEqual([409, "INVALID_STATE"]);
});

test("statuses move the message (delivered, read → opened) once each; failed carries the error code", async () => {
  const c = ctx.owner.client;
  const anaId = await contact(ANA, "Ana");
  await inbound(ANA, "wamid.in2", "One more thing");
  const first = await settled(
    (await c.post(`${ctx.ws}/messages`, { contactId: anaId, channel: "chatapp2", content: { text: "Sure" } }))
      .body.id,
    "sent",
  );
  expect((await status(first.providerMessageId, "sent")).status).toBe(200);
  expect((await status(first.providerMessageId, "delivered")).status).toBe(200);
  expect(await message(first.id)).toMatchObject({ status: "delivered", deliveredAt: expect.any(String) });
  await status(first.providerMessageId, "read");
  await status(first.providerMessageId, "read");
  const read = await message(first.id);
  expect(read).toMatchObject({ status: "opened", openedAt: expect.any(String), opens: 1 });
  expect(read.history.filter((h: { status: string }) => h.status === "delivered")).toHaveLength(1);

  const second = await settled(
    (
      await c.post(`${ctx.ws}/messages`, {
        contactId: anaId,
        channel: "chatapp2",
        content: { text: "Again" },
      })
    ).body.id,
    "sent",
  );
  await status(second.providerMessageId, "failed", [{ code: 131026, title: "Message undeliverable" }]);
  expect(await message(second.id)).toMatchObject({ status: "failed", error: "131026 Message undeliverable" });
});

test("templates sync across every page keeping the approved ones, list answers them; a template send is checked against them", async () => {
  const c = ctx.owner.client;
  expect((await c.get(`${ctx.ws}/providers/chatapp2/templates`)).body).toEqual([]);
  const before = graph.received.length;
  const synced = await c.post(`${ctx.ws}/providers/chatapp2/templates/sync`);
  expect([synced.status, synced.body]).toEqual([200, { synced: 3 }]);
  expect(graph.received.slice(before).map((r) => [r.path, r.headers.authorization])).toEqual([
    [`/v19.0/${WABA_ID}/message_templates?limit=100`, `Bearer ${TOKEN}`],
    [`/v19.0/${WABA_ID}/message_templates?limit=100&after=page2`, `Bearer ${TOKEN}`],
  ]);
  const list = (await c.get(`${ctx.ws}/providers/chatapp2/templates`)).body;
  expect(
    list.map((t: Record<string, unknown>) => [t.name, t.language, t.category, t.parameterCount]),
  ).toEqual([
    ["order_update", "en_US", "UTILITY", 2],
    ["order_update", "es", "UTILITY", 2],
    ["welcome", "en_US", "UTILITY", 0],
  ]);
  expect(list[0].components).toEqual([
    { type: "HEADER", format: "TEXT", text: "Acme" },
    { type: "BODY", text: "Hi {{1}}, order {{2}} has shipped." },
  ]);

  // Bob last wrote two days ago (a callback Meta retried late): a template may open the conversation, a text may not.
  const bobId = await contact("+15557770000", "Bob");
  const late = await postCallback({
    metadata: { display_phone_number: "15550001111", phone_number_id: PHONE_ID },
    messages: [
      {
        from: "15557770000",
        id: "wamid.late",
        timestamp: String(Math.floor(Date.now() / 1000) - 2 * 86_400),
        type: "text",
        text: { body: "Where is my order?" },
      },
    ],
  });
  expect(late.status).toBe(200);
  const send = (content: Record<string, unknown>) =>
    c.post(`${ctx.ws}/messages`, { contactId: bobId, channel: "chatapp2", content });
  const refused = async (content: Record<string, unknown>) => {
    const res = await send(content);
    return [res.status, res.body.details?.[0]?.field];
  };
  const sendsBefore = sends().length;
  expect(await refused({ templateName: "order_update", language: "en_US", parameters: ["Bob"] })).toEqual([
    400,
    "content.parameters",
  ]);
  expect(await refused({ templateName: "order_updates", language: "en_US", parameters: [] })).toEqual([
    400,
    "content.templateName",
  ]);
  expect(await refused({ templateName: "order_update", language: "fr", parameters: ["Bob", "7"] })).toEqual([
    400,
    "content.language",
  ]);
  expect(await refused({ text: "Hi Bob" })).toEqual([409, undefined]);
  const ok = await send({
    templateName: "order_update",
    language: "es",
    parameters: ["{{ contact.firstName }}", "7"],
  });
  expect(ok.status).toBe(202);
  await settled(ok.body.id, "sent");
  expect(sends().length).toBe(sendsBefore + 1);
  expect(JSON.parse(sends().at(-1)!.body)).toEqual({
    messaging_product: "whatsapp",
    recipient_type: "individual",
    to: "15557770000",
    type: "template",
    template: {
      name: "order_update",
      language: { code: "es" },
      components: [
        {
          type: "body",
          parameters: [
            { type: "text", text: "Bob" },
            { type: "text", text: "7" },
          ],
        },
      ],
    },
  });
});

test("STOP on chatapp2 opts the contact out (source chat_command) and the confirmation goes back as a text", async () => {
  const c = ctx.owner.client;
  const carolId = await contact("+15558880000", "Carol");
  const before = sends().length;
  expect((await inbound("+15558880000", "wamid.stop1", "stop")).status).toBe(200);
  const consent = (await c.get(`${ctx.ws}/contacts/${carolId}/consent`)).body.chatapp2;
  expect(consent).toMatchObject({ status: "opted_out", source: "chat_command" });
  const confirmation = await waitFor(() => sends().slice(before)[0], 10_000, "the STOP confirmation");
  expect(JSON.parse(confirmation.body)).toMatchObject({
    to: "15558880000",
    type: "text",
    text: { body: expect.any(String) },
  });

  // A STOP delivered two days late still opts out; its reply would fall outside the window, so there is none.
  const erinId = await contact("+15556660000", "Erin");
  const late = await postCallback({
    metadata: { display_phone_number: "15550001111", phone_number_id: PHONE_ID },
    messages: [
      {
        from: "15556660000",
        id: "wamid.stop-late",
        timestamp: String(Math.floor(Date.now() / 1000) - 2 * 86_400),
        type: "text",
        text: { body: "STOP" },
      },
    ],
  });
  expect([late.status, late.body]).toEqual([200, { received: true }]);
  expect((await c.get(`${ctx.ws}/contacts/${erinId}/consent`)).body.chatapp2.status).toBe("opted_out");
  expect((await c.get(`${ctx.ws}/messages?contactId=${erinId}`)).body.data).toEqual([]);
});

test("a campaign's send node on chatapp2 sends its template content, rendered for the contact", async () => {
  const c = ctx.owner.client;
  const templateId = (
    await c.post(`${ctx.ws}/templates`, {
      name: "Shipping",
      channel: "chatapp2",
      content: {
        templateName: "order_update",
        language: "en_US",
        parameters: ["{{ contact.firstName }}", "A-42"],
      },
    })
  ).body.id;
  const campaign = await c.post(`${ctx.ws}/campaigns`, {
    name: "Shipped",
    workflow: {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "notify", type: "send", config: { channel: "chatapp2", templateId } },
        { id: "done", type: "exit", config: {} },
      ],
      edges: [
        { from: "entry", to: "notify" },
        { from: "notify", to: "done" },
      ],
    },
  });
  expect(campaign.status).toBe(201);
  const id = campaign.body.id;
  await c.post(`${ctx.ws}/campaigns/${id}/triggers`, {
    type: "event",
    config: { eventType: "order_shipped" },
  });
  expect((await c.post(`${ctx.ws}/campaigns/${id}/execute`)).status).toBe(200);
  const daveId = await contact("+15559990000", "Dave");
  const before = sends().length;
  expect((await c.post(`${ctx.ws}/events`, { type: "order_shipped", contactId: daveId })).status).toBe(201);
  const sentMessage = await waitFor(
    async () => {
      const [m] = (await c.get(`${ctx.ws}/messages?campaignId=${id}`)).body.data;
      return m?.status === "sent" ? m : undefined;
    },
    10_000,
    "the campaign's message sent",
  );
  expect(sentMessage).toMatchObject({ channel: "chatapp2", contactId: daveId, providerType: "chatapp2" });
  expect(JSON.parse(sends().slice(before).at(-1)!.body)).toEqual({
    messaging_product: "whatsapp",
    recipient_type: "individual",
    to: "15559990000",
    type: "template",
    template: {
      name: "order_update",
      language: { code: "en_US" },
      components: [
        {
          type: "body",
          parameters: [
            { type: "text", text: "Dave" },
            { type: "text", text: "A-42" },
          ],
        },
      ],
    },
  });
});

test("the routes are in /api/openapi with typed answers, the provider's failure declared as 502", async () => {
  const doc = (await app.http().get("/api/openapi")).body;
  const provider = doc.paths["/api/workspaces/{workspaceId}/providers/chatapp2"];
  expect(Object.keys(provider).sort()).toEqual(["delete", "get", "post"]);
  expect(Object.keys(provider.post.responses).sort()).toEqual(["200", "201", "4XX", "502"]);
  const templates =
    doc.paths["/api/workspaces/{workspaceId}/providers/chatapp2/templates"].get.responses["200"];
  expect(templates.content["application/json"].schema).toMatchObject({
    type: "array",
    items: { $ref: "#/components/schemas/Chatapp2Template" },
  });
  const sync = doc.paths["/api/workspaces/{workspaceId}/providers/chatapp2/templates/sync"].post.responses;
  expect(Object.keys(sync).sort()).toEqual(["200", "4XX", "502"]);
  const hooks = doc.paths["/api/providers/chatapp2/webhooks"];
  expect(Object.keys(hooks.get.responses["200"].content)).toEqual(["text/plain"]);
  expect(hooks.get.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
    "hub.challenge",
    "hub.mode",
    "hub.verify_token",
    "providerId",
  ]);
  expect(hooks.post.responses["200"].content["application/json"]).toBeDefined();
});

test("a sync replaces the kept set; the API failing is a 502 that keeps it", async () => {
  const c = ctx.owner.client;
  const path = `/v19.0/${WABA_ID}/message_templates?limit=100`;
  graph.setBehaviour((req) =>
    req.path === path
      ? {
          status: 200,
          body: JSON.stringify({ data: [template("welcome", "en_US", "APPROVED", "Hi")], paging: {} }),
        }
      : graphFake.answer(req),
  );
  expect((await c.post(`${ctx.ws}/providers/chatapp2/templates/sync`)).body).toEqual({ synced: 1 });
  const names = async () =>
    (await c.get(`${ctx.ws}/providers/chatapp2/templates`)).body.map((t: { name: string }) => t.name);
  expect(await names()).toEqual(["welcome"]);

  graph.setBehaviour((req) =>
    req.path === path
      ? { status: 500, body: '{"error":{"message":"An unknown error occurred","code":1}}' }
      : graphFake.answer(req),
  );
  const failed = await c.post(`${ctx.ws}/providers/chatapp2/templates/sync`);
  expect([failed.status, failed.body.code]).toEqual([502, "UPSTREAM_ERROR"]);
  expect(await names()).toEqual(["welcome"]);
  graph.setBehaviour(graphFake.answer);
});

test("a template with named parameters is sent with `parameter_name` on each, in the order its body names them", async () => {
  const c = ctx.owner.client;
  const path = `/v19.0/${WABA_ID}/message_templates?limit=100`;
  graph.setBehaviour((req) =>
    req.path === path
      ? {
          status: 200,
          body: JSON.stringify({
            data: [
              {
                ...template(
                  "order_named",
                  "en_US",
                  "APPROVED",
                  "Hi {{first_name}}, order {{order_id}} is ready, {{first_name}}.",
                ),
                parameter_format: "NAMED",
              },
            ],
            paging: {},
          }),
        }
      : graphFake.answer(req),
  );
  expect((await c.post(`${ctx.ws}/providers/chatapp2/templates/sync`)).body).toEqual({ synced: 1 });
  graph.setBehaviour(graphFake.answer);
  const list = (await c.get(`${ctx.ws}/providers/chatapp2/templates`)).body;
  expect(list.map((t: { name: string; parameterCount: number }) => [t.name, t.parameterCount])).toEqual([
    ["order_named", 2],
  ]);

  const bobId = await contact("+15557770000", "Bob");
  const ok = await c.post(`${ctx.ws}/messages`, {
    contactId: bobId,
    channel: "chatapp2",
    content: { templateName: "order_named", language: "en_US", parameters: ["{{ contact.firstName }}", "8"] },
  });
  expect(ok.status).toBe(202);
  await settled(ok.body.id, "sent");
  expect(JSON.parse(sends().at(-1)!.body).template).toEqual({
    name: "order_named",
    language: { code: "en_US" },
    components: [
      {
        type: "body",
        parameters: [
          { type: "text", parameter_name: "first_name", text: "Bob" },
          { type: "text", parameter_name: "order_id", text: "8" },
        ],
      },
    ],
  });
});
