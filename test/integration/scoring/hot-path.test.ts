import { Client } from "pg";
import { waitFor } from "../../helpers/wait";
import { SYSTEM } from "../../../lib/access";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { insertContact } from "../../helpers/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * The chain's score step on the events hot path: when no active rule cares
 * about an event's type it answers at once, without a transaction or a lock
 * on the contact; the workspace's rules are cached in process while their
 * version probe is unchanged.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let locker: Client;
const meta = () => ({ meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } });

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "jobs", "segments", "scoring"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
  locker = new Client({ connectionString: app.databaseUrl });
  await locker.connect();
});
afterAll(async () => {
  await locker.end();
  await app.stop();
});

const contact = () => insertContact(ctx.workspaceId);

const applyEvent = (contactId: string, type: string) =>
  app.broker.call("scoring.applyEvent", { eventId: newId(), contactId, type }, meta()) as Promise<{
    scoreBefore: number | null;
    score: number | null;
    applied: Array<{ ruleId: string; points: number }>;
  }>;

/** Hold the contact's row lock in another connection while `body` runs. */
async function whileLocked<T>(contactId: string, body: () => Promise<T>): Promise<T> {
  await locker.query("BEGIN");
  await locker.query("SELECT 1 FROM contacts WHERE id = $1 FOR UPDATE", [contactId]);
  try {
    return await body();
  } finally {
    await locker.query("ROLLBACK");
  }
}

test("an event no active rule scores takes no lock and writes nothing", async () => {
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, { name: "Buy", eventType: "buy-h", points: 5 });
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Off",
    eventType: "view-h",
    points: 5,
    active: false,
  });
  const id = await contact();
  // With the contact's row locked elsewhere, an unscored type still answers at once.
  const result = await whileLocked(id, () => applyEvent(id, "view-h"));
  expect(result).toEqual({ scoreBefore: null, score: null, applied: [] });

  // A scored type locks the contact: it waits for the other transaction, then scores.
  await locker.query("BEGIN");
  await locker.query("SELECT 1 FROM contacts WHERE id = $1 FOR UPDATE", [id]);
  const pending = applyEvent(id, "buy-h");
  await waitFor(
    async () => {
      const { rows } = await locker.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return rows[0].n > 0;
    },
    5000,
    "the score step to wait on the contact's lock",
  );
  await locker.query("ROLLBACK");
  expect(await pending).toMatchObject({ scoreBefore: 0, score: 5, applied: [{ points: 5 }] });
});

test("a rule write is seen by the next event, whichever node wrote it", async () => {
  const id = await contact();
  expect((await applyEvent(id, "signup-h")).applied).toEqual([]);
  const created = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Signup",
    eventType: "signup-h",
    points: 3,
  });
  expect((await applyEvent(id, "signup-h")).applied).toEqual([{ ruleId: created.body.id, points: 3 }]);
  await ctx.owner.client.patch(`${ctx.ws}/scoring-rules/${created.body.id}`, { points: 4 });
  expect((await applyEvent(id, "signup-h")).applied).toEqual([{ ruleId: created.body.id, points: 4 }]);
  await ctx.owner.client.delete(`${ctx.ws}/scoring-rules/${created.body.id}`);
  expect((await applyEvent(id, "signup-h")).applied).toEqual([]);

  // Another node wrote a rule (straight into the table here): the very next event sees it.
  expect((await applyEvent(id, "trial-h")).applied).toEqual([]);
  const sequelize = await database();
  const ruleId = newId();
  await sequelize.query(
    `INSERT INTO scoring_rules (id, workspace_id, name, event_type, points) VALUES ($1, $2, 'Trial', 'trial-h', 2)`,
    { bind: [ruleId, ctx.workspaceId] },
  );
  expect((await applyEvent(id, "trial-h")).applied).toEqual([{ ruleId, points: 2 }]);
  await sequelize.query(`UPDATE scoring_rules SET active = false, updated_at = now() WHERE id = $1`, {
    bind: [ruleId],
  });
  expect((await applyEvent(id, "trial-h")).applied).toEqual([]);
});

test("events arriving together are scored exactly, with caps; a contact held elsewhere waits alone", async () => {
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, {
    name: "Bulk",
    eventType: "bulk-h",
    points: 2,
    maxPerContact: 3,
  });
  const [a, b, held] = [await contact(), await contact(), await contact()];
  await locker.query("BEGIN");
  await locker.query("SELECT 1 FROM contacts WHERE id = $1 FOR UPDATE", [held]);
  const heldResults = Promise.all([1, 2, 3, 4].map(() => applyEvent(held, "bulk-h")));
  // Sent together, so they share batches with the held contact's events; they finish while it is held.
  const free = await Promise.all([a, b, a, b, a, b, a, b].map((id) => applyEvent(id, "bulk-h")));
  for (const id of [a, b]) {
    const mine = free.filter((_, i) => [a, b][i % 2] === id);
    // Each result continues the score of the one before it: 0 → 2 → 4 → 6, then the cap holds it.
    const steps = mine.map((r) => [r.scoreBefore, r.score]).sort((x, y) => x[0]! - y[0]! || x[1]! - y[1]!);
    expect(steps).toEqual([
      [0, 2],
      [2, 4],
      [4, 6],
      [6, 6],
    ]);
  }
  const sequelize = await database();
  const score = async (id: string) =>
    (
      await sequelize.query<{ score: number }>(`SELECT score FROM contacts WHERE id = $1`, {
        bind: [id],
        type: "SELECT" as never,
      })
    )[0].score;
  expect([await score(a), await score(b), await score(held)]).toEqual([6, 6, 0]);
  await locker.query("ROLLBACK");
  expect((await heldResults).filter((r) => r.applied.length > 0)).toHaveLength(3);
  expect(await score(held)).toBe(6);
});

test("a held contact's events wait for it together: one transaction scores them, in order", async () => {
  await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, { name: "Hot", eventType: "hot-h", points: 3 });
  const held = await contact();
  const { answers } = await whileLocked(held, async () => {
    const answers = Promise.all([1, 2, 3, 4, 5].map(() => applyEvent(held, "hot-h")));
    // All five are held behind the lock in one transaction (one scoring each would wait five times).
    // Asked outside the locker's transaction, which keeps one snapshot of pg_stat_activity.
    const sequelize = await database();
    await waitFor(
      async () =>
        (
          await sequelize.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                AND query LIKE 'SELECT score FROM contacts%FOR UPDATE'`,
            { type: "SELECT" as never },
          )
        ).length > 0,
      10_000,
      "the held events waiting for the contact",
    );
    return { answers };
  });
  // Each continues the score of the one before it.
  const steps = (await answers).map((r) => [r.scoreBefore!, r.score!]).sort((x, y) => x[0] - y[0]);
  expect(steps).toEqual([
    [0, 3],
    [3, 6],
    [6, 9],
    [9, 12],
    [12, 15],
  ]);
  const sequelize = await database();
  const [{ transactions }] = await sequelize.query<{ transactions: string }>(
    `SELECT count(DISTINCT xmin::text) AS transactions FROM score_history WHERE contact_id = $1`,
    { bind: [held], type: "SELECT" as never },
  );
  expect(Number(transactions)).toBe(1);
});
