import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, type HttpClient } from "../../helpers/http";
import { domainEventProbe } from "./probe";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let client: HttpClient;
let probe: ReturnType<typeof domainEventProbe>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "contacts"] });
  probe = domainEventProbe(app.broker);
  ctx = await ownerWithWorkspace(app.baseUrl);
  client = ctx.owner.client;
});
afterAll(() => app.stop());

describe("consent", () => {
  test("GET lists every channel; PUT opt-out emits unsubscribe.<channel> with source api", async () => {
    const contact = (
      await client.post(`${ctx.ws}/contacts`, { email: "c1@example.com", externalId: "ext-1" })
    ).body;
    const initial = await client.get(`${ctx.ws}/contacts/${contact.id}/consent`);
    expect(initial.status).toBe(200);
    expect(Object.keys(initial.body).sort()).toEqual(["chatapp1", "chatapp2", "email", "push", "sms"]);
    expect(initial.body.sms.status).toBe("unknown");

    const out = await client.put(`${ctx.ws}/contacts/${contact.id}/consent`, {
      channel: "sms",
      status: "opted_out",
    });
    expect(out.status).toBe(200);
    expect(out.body.sms).toMatchObject({ status: "opted_out", source: "api" });
    expect(out.body.email.status).toBe("unknown");
    const [event] = await probe.waitFor(
      (e) => e.type === "unsubscribe.sms" && e.data.contactId === contact.id,
    );
    expect(event.data).toEqual({
      contactId: contact.id,
      email: "c1@example.com",
      externalId: "ext-1",
      channel: "sms",
      source: "api",
    });

    const optIn = await client.put(`${ctx.ws}/contacts/${contact.id}/consent`, {
      channel: "email",
      status: "opted_in",
      source: "form",
    });
    expect(optIn.body.email).toMatchObject({ status: "opted_in", source: "form" });
    expect(probe.seen.some((e) => e.type === "unsubscribe.email" && e.data.contactId === contact.id)).toBe(
      false,
    );

    const withSource = await client.put(`${ctx.ws}/contacts/${contact.id}/consent`, {
      channel: "push",
      status: "opted_out",
      source: "preference_centre",
    });
    expect(withSource.body.push).toMatchObject({ status: "opted_out", source: "preference_centre" });
    await probe.waitFor((e) => e.type === "unsubscribe.push" && e.data.source === "preference_centre");

    const stored = await client.get(`${ctx.ws}/contacts/${contact.id}`);
    expect(stored.body.consent.sms.status).toBe("opted_out");
  });

  test("all opts every channel out and emits unsubscribe.all alone", async () => {
    const contact = (await client.post(`${ctx.ws}/contacts`, { email: "c2@example.com" })).body;
    const res = await client.put(`${ctx.ws}/contacts/${contact.id}/consent`, {
      channel: "all",
      status: "opted_out",
    });
    expect(res.status).toBe(200);
    for (const channel of ["email", "sms", "push", "chatapp1", "chatapp2"])
      expect(res.body[channel].status).toBe("opted_out");
    const [event] = await probe.waitFor(
      (e) => e.type === "unsubscribe.all" && e.data.contactId === contact.id,
    );
    expect(event.data.channel).toBe("all");
    const perChannel = probe.seen.filter(
      (e) =>
        e.type.startsWith("unsubscribe.") && e.type !== "unsubscribe.all" && e.data.contactId === contact.id,
    );
    expect(perChannel).toEqual([]);
  });

  test("bad channel or status is 400; unknown contact 404; read scope cannot PUT", async () => {
    const contact = (await client.post(`${ctx.ws}/contacts`, { email: "c3@example.com" })).body;
    const bad = await client.put(`${ctx.ws}/contacts/${contact.id}/consent`, {
      channel: "fax",
      status: "opted_out",
    });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].field).toBe("channel");
    expect(
      (await client.put(`${ctx.ws}/contacts/${contact.id}/consent`, { channel: "email", status: "maybe" }))
        .status,
    ).toBe(400);
    expect((await client.get(`${ctx.ws}/contacts/nope/consent`)).status).toBe(404);
    const key = (await client.post(`${ctx.ws}/keys`, { name: "r", scopes: ["contacts.read"] })).body.key;
    const anon = app.http();
    expect((await anon.get(`${ctx.ws}/contacts/${contact.id}/consent`, { bearer: key })).status).toBe(200);
    expect(
      (
        await anon.put(
          `${ctx.ws}/contacts/${contact.id}/consent`,
          { channel: "email", status: "opted_out" },
          { bearer: key },
        )
      ).status,
    ).toBe(403);
  });
});

describe("do-not-contact", () => {
  test("add (normalised), 409 twice, list paginated and filtered, delete by type and value", async () => {
    const add = await client.post(`${ctx.ws}/contacts/dnc`, {
      type: "email",
      value: "Blocked@Example.com",
      reason: "legal",
    });
    expect(add.status).toBe(201);
    expect(add.body).toMatchObject({ type: "email", value: "blocked@example.com", reason: "legal" });
    expect(
      (await client.post(`${ctx.ws}/contacts/dnc`, { type: "email", value: "blocked@example.com" })).status,
    ).toBe(409);
    const phone = await client.post(`${ctx.ws}/contacts/dnc`, { type: "phone", value: "+1 415 555 2671" });
    expect(phone.body.value).toBe("+14155552671");
    const badPhone = await client.post(`${ctx.ws}/contacts/dnc`, { type: "phone", value: "abc" });
    expect(badPhone.status).toBe(400);
    expect(badPhone.body.details[0].field).toBe("value");
    expect((await client.post(`${ctx.ws}/contacts/dnc`, { type: "fax", value: "1" })).status).toBe(400);

    const list = await client.get(`${ctx.ws}/contacts/dnc?limit=1`);
    expect(list.status).toBe(200);
    expect(list.body.pagination).toEqual({ page: 1, limit: 1, total: 2, totalPages: 2 });
    expect(list.body.data[0].value).toBe("+14155552671");
    const emails = await client.get(`${ctx.ws}/contacts/dnc?type=email`);
    expect(emails.body.data.map((e: { value: string }) => e.value)).toEqual(["blocked@example.com"]);

    const del = await client.delete(
      `${ctx.ws}/contacts/dnc?type=phone&value=${encodeURIComponent("+14155552671")}`,
    );
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect(
      (await client.delete(`${ctx.ws}/contacts/dnc?type=phone&value=${encodeURIComponent("+14155552671")}`))
        .status,
    ).toBe(404);
    expect((await client.delete(`${ctx.ws}/contacts/dnc?type=phone`)).status).toBe(400);
    expect((await client.get(`${ctx.ws}/contacts/dnc`)).body.pagination.total).toBe(1);

    // Senders ask before sending (internal action, system principal, workspace from meta).
    const blocked = await app.broker.call(
      "contacts.dncBlocked",
      { emails: ["BLOCKED@example.com", "fine@example.com", "junk"], phones: ["+14155552671"] },
      { meta: { principal: { kind: "system" }, workspaceId: ctx.workspaceId } },
    );
    expect(blocked).toEqual(["blocked@example.com"]);
  });
});

describe("insights", () => {
  test("attribute-keys counts keys with their types; geo counts countries and cities", async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    const c = fresh.owner.client;
    await c.post(`${fresh.ws}/contacts`, {
      email: "g1@x.io",
      country: "FR",
      city: "Paris",
      attributes: { plan: "pro", seats: 2 },
    });
    await c.post(`${fresh.ws}/contacts`, {
      email: "g2@x.io",
      country: "FR",
      city: "Lyon",
      attributes: { plan: "free" },
    });
    await c.post(`${fresh.ws}/contacts`, { email: "g3@x.io", country: "FR", city: "Paris" });
    await c.post(`${fresh.ws}/contacts`, {
      email: "g4@x.io",
      country: "DE",
      city: "Berlin",
      attributes: { seats: "many" },
    });
    await c.post(`${fresh.ws}/contacts`, { email: "g5@x.io" });

    const keys = await c.get(`${fresh.ws}/contacts/attribute-keys`);
    expect(keys.status).toBe(200);
    expect(keys.body).toEqual([
      { key: "plan", count: 2, types: ["string"] },
      { key: "seats", count: 2, types: ["number", "string"] },
    ]);

    const geo = await c.get(`${fresh.ws}/contacts/geo`);
    expect(geo.status).toBe(200);
    expect(geo.body.countries).toEqual([
      { country: "FR", count: 3 },
      { country: "DE", count: 1 },
      { country: null, count: 1 },
    ]);
    expect(geo.body.cities).toEqual([
      { country: "FR", city: "Paris", count: 2 },
      { country: "DE", city: "Berlin", count: 1 },
      { country: "FR", city: "Lyon", count: 1 },
    ]);
    const fr = await c.get(`${fresh.ws}/contacts/geo?country=FR`);
    expect(fr.body.cities.map((x: { city: string }) => x.city)).toEqual(["Paris", "Lyon"]);
  });
});
