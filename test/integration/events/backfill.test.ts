import { QueryTypes } from "sequelize";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * Backfill (contract-messaging 12): `POST {ws}/events` keeps an optional
 * past `timestamp`; the chain runs as for any event, and a segment's
 * `within` reads the event's own time, not when it was imported.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "events", "segments", "jobs"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

async function contact(): Promise<string> {
  const id = newId();
  await (
    await database()
  ).query(`INSERT INTO contacts (id, workspace_id, email) VALUES ($1, $2, $3)`, {
    bind: [id, ctx.workspaceId, `${id}@example.test`],
  });
  return id;
}

const post = (body: Record<string, unknown>) => ctx.owner.client.post(`${ctx.ws}/events`, body);

test("a past timestamp is kept, in UTC, in the answer and in the list's order", async () => {
  const contactId = await contact();
  const now = await post({ type: "visit", contactId });
  const old = await post({ type: "visit", contactId, timestamp: "2025-06-01T10:00:00+02:00" });
  expect(now.status).toBe(201);
  expect(old.status).toBe(201);
  expect(old.body.timestamp).toBe("2025-06-01T08:00:00.000Z");
  const list = await ctx.owner.client.get(`${ctx.ws}/events?contactId=${contactId}`);
  expect(list.body.map((e: { id: string; timestamp: string }) => [e.id, e.timestamp])).toEqual([
    [now.body.id, now.body.timestamp],
    [old.body.id, "2025-06-01T08:00:00.000Z"],
  ]);
});

test("a time more than 5 minutes ahead, or not a date-time with its zone, is a 400 naming timestamp", async () => {
  const contactId = await contact();
  const ahead = new Date(Date.now() + 6 * 60_000).toISOString();
  for (const timestamp of [ahead, "yesterday", "2025-06-01T10:00:00", 1_700_000_000]) {
    const res = await post({ type: "visit", contactId, timestamp });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("VALIDATION_ERROR");
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain("timestamp");
  }
  // A clock a little fast is not refused.
  const soon = await post({
    type: "visit",
    contactId,
    timestamp: new Date(Date.now() + 60_000).toISOString(),
  });
  expect(soon.status).toBe(201);
  const stored = await (
    await database()
  ).query(`SELECT id FROM events WHERE contact_id = $1`, { bind: [contactId], type: QueryTypes.SELECT });
  expect(stored).toHaveLength(1);
});

test("the chain runs for a backfilled event and a segment's `within` reads the event's own time", async () => {
  const seg = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "Bought this week",
    filter: {
      match: "all",
      conditions: [{ event: "purchase", operator: "performed", within: { days: 7 } }],
    },
  });
  expect(seg.status).toBe(201);
  const members = async () =>
    (await ctx.owner.client.get(`${ctx.ws}/segments/${seg.body.id}/members`)).body.data.map(
      (m: { id: string }) => m.id,
    );
  const contactId = await contact();

  // A purchase a month ago, imported now: the chain evaluates the contact, who is not a recent buyer.
  expect((await post({ type: "purchase", contactId, timestamp: daysAgo(30) })).status).toBe(201);
  expect(await members()).toEqual([]);

  // One two days ago: the same chain (answered after it ran) makes the contact a member.
  expect((await post({ type: "purchase", contactId, timestamp: daysAgo(2) })).status).toBe(201);
  expect(await members()).toEqual([contactId]);
});
