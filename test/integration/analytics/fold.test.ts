import { Client } from "pg";
import { QueryTypes } from "sequelize";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import {
  EVENTS_FOLD_LOCK,
  FOLD_LOCK,
  foldBatch,
  foldEvents,
  foldRollups,
  sumRollups,
} from "../../../services/analytics/rollups.repo";
import { rebuildRollups } from "../../../services/analytics/rebuild";
import { startApp, type TestApp } from "../../helpers/app";
import { waitFor } from "../../helpers/wait";
import { asWorkspaceId } from "../../../lib/tenancy";

/**
 * The fold of the rollup deltas (migration 0085, rollups.repo.ts): each delta
 * lands in the rollups exactly once, at every tier and in the `all:` series,
 * whoever folds and whatever is written meanwhile; and a read is exact at
 * every moment of a fold. The contacts' activity is kept once per contact
 * and bucket, derived by the events' fold (migration 0112).
 */

let app: TestApp;
let ws: string;

const rows = async <T extends object>(sql: string, bind: unknown[] = []) =>
  (await database()).query<T>(sql, { bind, type: QueryTypes.SELECT });

const START = Date.parse("2026-05-01T00:00:00Z");
const METRICS = ["events", "revenue"];

interface Fact {
  metric: string;
  at: Date;
  channel: string;
  campaign: string;
  dim: string;
  value: number;
}

/** Facts over three days at random minutes, with splits and fractional values. */
function facts(n: number): Fact[] {
  return Array.from({ length: n }, (_, i) => ({
    metric: METRICS[i % 2],
    at: new Date(START + Math.floor(Math.random() * 3 * 86_400_000)),
    channel: ["email", "sms", ""][i % 3],
    campaign: i % 5 === 0 ? "c1" : "",
    dim: ["a", "b"][i % 2],
    value: i % 2 ? 0.25 : 1,
  }));
}

/** Facts appended as the triggers do, through analytics_add, one transaction per call. */
async function append(list: Fact[], workspaceId = ws): Promise<void> {
  await (
    await database()
  ).query(`SELECT analytics_add($1, $2, $3, $4, $5, $6, $7)`, {
    bind: [
      list.map(() => workspaceId),
      list.map((f) => f.metric),
      list.map((f) => f.at),
      list.map((f) => f.channel),
      list.map((f) => f.campaign),
      list.map((f) => f.dim),
      list.map((f) => f.value),
    ],
  });
}

/** What the rollups must hold for `list`: each key at each tier, split and `all:`, as `key → value`. */
function expected(list: Fact[]): Record<string, number> {
  const out: Record<string, number> = {};
  const add = (key: string, value: number) => (out[key] = (out[key] ?? 0) + value);
  for (const f of list)
    for (const [tier, ms] of [
      [0, 900_000],
      [1, 3_600_000],
      [2, 86_400_000],
    ]) {
      const bucket = new Date(Math.floor(f.at.getTime() / ms) * ms).toISOString();
      add([f.metric, tier, bucket, f.channel, f.campaign, f.dim].join("|"), f.value);
      add([`all:${f.metric}`, tier, bucket, "", "", ""].join("|"), f.value);
    }
  return out;
}

async function rollups(): Promise<Record<string, number>> {
  const found = await rows<Record<string, string>>(
    `SELECT metric, tier, bucket, channel, campaign_id, dim, value FROM analytics_rollups WHERE workspace_id = $1`,
    [ws],
  );
  return Object.fromEntries(
    found.map((r) => [
      [r.metric, r.tier, new Date(r.bucket).toISOString(), r.channel, r.campaign_id, r.dim].join("|"),
      Number(r.value),
    ]),
  );
}

const deltas = async () =>
  Number(
    (
      await rows<{ n: string }>(`SELECT count(*) AS n FROM analytics_rollup_deltas WHERE workspace_id = $1`, [
        ws,
      ])
    )[0].n,
  );

beforeAll(async () => {
  // The service's own timer stays out of the way: these tests fold themselves.
  app = await startApp({ services: ["analytics"], env: { ANALYTICS_FOLD_MS: "3600000" } });
  ws = newId();
  await (
    await database()
  ).query(`INSERT INTO workspaces (id, name, slug) VALUES ($1, 'W', $1)`, { bind: [ws] });
});
afterAll(() => app.stop());

// Each test leaves the deltas folded and the rollups cleared.
afterEach(async () => {
  await foldRollups();
  await (await database()).query(`DELETE FROM analytics_rollups WHERE workspace_id = $1`, { bind: [ws] });
});

test("an empty table: a fold folds nothing and changes nothing", async () => {
  expect(await foldBatch()).toBe(0);
  expect(await app.broker.call("analytics.foldRollups")).toBe(0);
  expect(await rollups()).toEqual({});
});

test("a fold moves every delta into the rollups at each tier and the all: series, and deletes it", async () => {
  const list = facts(500);
  await append(list.slice(0, 250));
  await append(list.slice(250));
  expect(await deltas()).toBeGreaterThan(0);
  expect(await app.broker.call("analytics.foldRollups")).toBeGreaterThan(0);
  expect(await deltas()).toBe(0);
  const held = await rollups();
  const want = expected(list);
  expect(Object.keys(held).sort()).toEqual(Object.keys(want).sort());
  for (const [key, value] of Object.entries(want)) expect([key, held[key]]).toEqual([key, value]);
});

test("while another replica folds, a fold does nothing and says so", async () => {
  await append(facts(20));
  const other = new Client({ connectionString: app.databaseUrl });
  await other.connect();
  try {
    await other.query("BEGIN");
    await other.query("SELECT pg_advisory_xact_lock($1)", [FOLD_LOCK]);
    expect(await foldBatch()).toBeNull();
    expect(await foldRollups()).toBe(0);
    expect(await deltas()).toBeGreaterThan(0);
    await other.query("COMMIT");
  } finally {
    await other.end();
  }
  expect(await foldBatch()).toBeGreaterThan(0);
  expect(await deltas()).toBe(0);
});

test("the deltas of a workspace deleted before the fold are dropped with it", async () => {
  const gone = newId();
  const sequelize = await database();
  await sequelize.query(`INSERT INTO workspaces (id, name, slug) VALUES ($1, 'Gone', $1)`, { bind: [gone] });
  await append(facts(30), gone);
  await append(facts(30));
  await sequelize.query(`DELETE FROM workspaces WHERE id = $1`, { bind: [gone] });
  expect(await foldRollups()).toBeGreaterThan(0);
  const [left] = await rows<{ deltas: string; rollups: string }>(
    `SELECT (SELECT count(*) FROM analytics_rollup_deltas) AS deltas,
            (SELECT count(*) FROM analytics_rollups WHERE workspace_id = $1) AS rollups`,
    [gone],
  );
  expect(left).toEqual({ deltas: "0", rollups: "0" });
  expect(Object.keys(await rollups()).length).toBeGreaterThan(0);
});

test("writers of one bucket, for a contact whose first times are known, wait for no one's commit", async () => {
  const contact = newId();
  await (
    await database()
  ).query(`INSERT INTO contacts (id, workspace_id, email) VALUES ($1, $2, $3)`, {
    bind: [contact, ws, `${contact}@people.test`],
  });
  const [a, b] = [
    new Client({ connectionString: app.databaseUrl }),
    new Client({ connectionString: app.databaseUrl }),
  ];
  await Promise.all([a.connect(), b.connect()]);
  const event = (client: Client, at: number) =>
    client.query(
      `INSERT INTO events (id, workspace_id, contact_id, type, utm_source, utm_medium, timestamp)
       VALUES ($1, $2, $3, 'page_view', 'news', 'email', $4)`,
      [newId(), ws, contact, new Date(at)],
    );
  try {
    // The contact's first page view and first source, committed.
    await event(a, START);
    await a.query("BEGIN");
    await event(a, START + 60_000);
    await b.query("BEGIN");
    // Upserted rollup rows, or a first time's no-op upsert, would hold b here until a commits.
    await b.query("SET LOCAL lock_timeout = '3s'");
    await event(b, START + 120_000);
    await b.query("COMMIT");
    await a.query("COMMIT");
  } finally {
    await Promise.all([a.end(), b.end()]);
  }
  await foldEvents(true);
  const [firsts] = await rows<{ first_at: Date }>(
    `SELECT first_at FROM analytics_contact_firsts WHERE workspace_id = $1 AND contact_id = $2`,
    [ws, contact],
  );
  expect(new Date(firsts.first_at).getTime()).toBe(START);
});

test("two folders at once, with facts written meanwhile: each delta is folded exactly once", async () => {
  const list: Fact[] = [];
  let writing = true;
  // Two folders in small batches, as two replicas would run the step side by side.
  const folder = async () => {
    let folded = 0;
    let busy = 0;
    while (writing || (await deltas()) > 0) {
      const n = await foldBatch(37);
      if (n === null) busy++;
      else folded += n;
    }
    return { folded, busy };
  };
  const folders = Promise.all([folder(), folder()]);
  for (let round = 0; round < 30; round++) {
    const batch = facts(40);
    await append(batch);
    list.push(...batch);
  }
  writing = false;
  const [a, b] = await folders;
  expect(a.folded + b.folded).toBeGreaterThan(0);
  expect(await deltas()).toBe(0);
  const held = await rollups();
  const want = expected(list);
  expect(Object.keys(held).sort()).toEqual(Object.keys(want).sort());
  for (const [key, value] of Object.entries(want)) expect([key, held[key]]).toEqual([key, value]);
});

test("a read during a fold sums rollups and unfolded deltas exactly, at every moment", async () => {
  const list = facts(2000);
  for (let i = 0; i < list.length; i += 100) await append(list.slice(i, i + 100));
  const edges = [new Date(START), new Date(START + 86_400_000), new Date(START + 3 * 86_400_000)];
  const want = (split: "all" | "email") =>
    METRICS.map((metric) =>
      [1, 2].map((period) =>
        list
          .filter(
            (f) =>
              f.metric === metric &&
              (split === "all" || f.channel === split) &&
              f.at >= edges[period - 1] &&
              f.at < edges[period],
          )
          .reduce((s, f) => s + f.value, 0),
      ),
    );
  const read = async (split: "all" | "email") => {
    const found = await sumRollups(asWorkspaceId(ws), {
      metrics: METRICS,
      edges,
      by: ["metric", "period"],
      ...(split === "email" ? { channel: "email" } : {}),
    });
    return METRICS.map((metric) =>
      [1, 2].map((period) =>
        found
          .filter((r) => r.metric === metric && Number(r.period) === period)
          .reduce((s, r) => s + r.value, 0),
      ),
    );
  };
  const wantAll = want("all");
  const wantEmail = want("email");
  let reads = 0;
  let folding = true;
  const reader = (async () => {
    while (folding) {
      expect(await read("all")).toEqual(wantAll);
      expect(await read("email")).toEqual(wantEmail);
      reads++;
    }
  })();
  // Small batches, so the reads fall between many folds.
  let folded: number | null;
  do folded = await foldBatch(25);
  while (folded !== 0);
  folding = false;
  await reader;
  expect(reads).toBeGreaterThan(0);
  expect(await deltas()).toBe(0);
  expect(await read("all")).toEqual(wantAll);
});

test("the contacts' activity is kept with each event, once per contact and 15-minute bucket; a removed contact's goes", async () => {
  const sequelize = await database();
  const [kept, removed] = [newId(), newId()];
  for (const contact of [kept, removed])
    await sequelize.query(`INSERT INTO contacts (id, workspace_id, email) VALUES ($1, $2, $3)`, {
      bind: [contact, ws, `${contact}@people.test`],
    });
  const events = (contact: string, minutes: number[]) =>
    sequelize.query(
      `INSERT INTO events (id, workspace_id, contact_id, type, timestamp)
       SELECT gen_random_uuid()::text, $1, $2, 'page_view', $3::timestamptz + m * interval '1 minute'
         FROM unnest($4::int[]) m`,
      { bind: [ws, contact, new Date(START), minutes] },
    );
  const activity = async (contact: string) => {
    await foldEvents(true);
    return rows<{ bucket: Date }>(
      `SELECT bucket FROM analytics_contact_activity WHERE contact_id = $1 ORDER BY bucket`,
      [contact],
    );
  };
  const quarters = [START, START + 900_000].map((at) => new Date(at).toISOString());
  const iso = (list: Array<{ bucket: Date }>) => list.map((row) => new Date(row.bucket).toISOString());
  // Two statements in the first quarter hour, one of them with two events of it, then one in the second.
  await events(kept, [1, 2]);
  await events(kept, [3]);
  await events(kept, [20]);
  await events(removed, [1]);
  expect(iso(await activity(kept))).toEqual(quarters);
  expect(iso(await activity(removed))).toEqual([quarters[0]]);

  // Concurrent writers of one contact's buckets, in opposite orders: each bucket once, no deadlock.
  await Promise.all([
    sequelize.transaction(async (transaction) => {
      for (const minutes of [[31], [46], [61]])
        await sequelize.query(
          `INSERT INTO events (id, workspace_id, contact_id, type, timestamp)
           SELECT gen_random_uuid()::text, $1, $2, 'page_view', $3::timestamptz + m * interval '1 minute'
             FROM unnest($4::int[]) m`,
          { bind: [ws, kept, new Date(START), minutes], transaction },
        );
    }),
    events(kept, [62, 47, 32]),
  ]);
  expect(iso(await activity(kept))).toEqual(
    [0, 1, 2, 3, 4].map((quarter) => new Date(START + quarter * 900_000).toISOString()),
  );

  await sequelize.query(`DELETE FROM contacts WHERE id = $1`, { bind: [removed] });
  expect(await activity(removed)).toEqual([]);
});

describe("stored events' facts, derived by the fold (migration 0112)", () => {
  const DAY = Date.parse("2026-06-01T00:00:00Z");

  async function workspaceWith(contacts: number): Promise<{ id: string; contacts: string[] }> {
    const sequelize = await database();
    const id = newId();
    await sequelize.query(`INSERT INTO workspaces (id, name, slug) VALUES ($1, 'P', $1)`, { bind: [id] });
    const ids = Array.from({ length: contacts }, () => newId());
    for (const contact of ids)
      await sequelize.query(`INSERT INTO contacts (id, workspace_id, email) VALUES ($1, $2, $3)`, {
        bind: [contact, id, `${contact}@people.test`],
      });
    return { id, contacts: ids };
  }

  const store = async (
    workspaceId: string,
    event: { id?: string; contact: string; type: string; minute: number; metadata?: object; utm?: string },
  ) => {
    const id = event.id ?? newId();
    await (
      await database()
    ).query(
      `INSERT INTO events (id, workspace_id, contact_id, type, metadata, utm_source, timestamp)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)`,
      {
        bind: [
          id,
          workspaceId,
          event.contact,
          event.type,
          JSON.stringify(event.metadata ?? {}),
          event.utm ?? null,
          new Date(DAY + event.minute * 60_000),
        ],
      },
    );
    return id;
  };

  const pending = async (workspaceId: string) =>
    Number(
      (
        await rows<{ n: string }>(
          `SELECT count(*) AS n FROM analytics_events_pending WHERE workspace_id = $1`,
          [workspaceId],
        )
      )[0].n,
    );

  /** Rollups and unfolded deltas, summed by metric (the `all:` series and the contacts' creations left out). */
  const sums = async (workspaceId: string) =>
    Object.fromEntries(
      (
        await rows<{ metric: string; value: string }>(
          `SELECT metric, sum(value) AS value FROM (
             SELECT metric, value FROM analytics_rollups WHERE workspace_id = $1 AND tier = 0
             UNION ALL
             SELECT metric, value FROM analytics_rollup_deltas WHERE workspace_id = $1) x
            WHERE metric NOT LIKE 'all:%' AND metric <> 'contacts'
            GROUP BY metric`,
          [workspaceId],
        )
      ).map((row) => [row.metric, Number(row.value)]),
    );

  const contactRows = (table: string, workspaceId: string) =>
    rows<{ contact_id: string }>(
      `SELECT DISTINCT contact_id FROM ${table} WHERE workspace_id = $1 ORDER BY contact_id`,
      [workspaceId],
    );

  test("an event stored waits in one appended row, and its facts are derived once, as it was stored", async () => {
    const { id: own, contacts } = await workspaceWith(2);
    const [first, second] = contacts;
    const viewed = await store(own, { contact: first, type: "page_view", minute: 1 });
    const bought = await store(own, {
      contact: first,
      type: "purchase",
      minute: 2,
      metadata: { amount: 10 },
    });
    expect(await pending(own)).toBe(2);
    expect(await sums(own)).toEqual({});

    // Before the fold, the page view moves to the second contact (a merge) and the purchase is removed.
    const sequelize = await database();
    await sequelize.query(`UPDATE events SET contact_id = $1 WHERE id = $2`, { bind: [second, viewed] });
    await sequelize.query(`DELETE FROM events WHERE id = $1`, { bind: [bought] });

    expect(await foldEvents(true)).toBe(2);
    expect(await foldEvents(true)).toBe(0);
    expect(await pending(own)).toBe(0);
    // Both counted as stored; the per-contact facts are the moved event's, with the contact that holds it.
    expect(await sums(own)).toEqual({ events: 2, revenue: 10, orders: 1 });
    expect(await contactRows("analytics_contact_firsts", own)).toEqual([{ contact_id: second }]);
    expect(await contactRows("analytics_contact_activity", own)).toEqual([{ contact_id: second }]);
    expect(await contactRows("analytics_contact_conversions", own)).toEqual([]);
  });

  test("a conversion is attributed to the touches stored by then: its own transaction's, not a later one's", async () => {
    const { id: own, contacts } = await workspaceWith(1);
    const [buyer] = contacts;
    const sequelize = await database();
    await sequelize.transaction(async (transaction) => {
      for (const [type, minute, utm] of [
        ["page_view", 1, "news"],
        ["purchase", 5, null],
      ] as const)
        await sequelize.query(
          `INSERT INTO events (id, workspace_id, contact_id, type, metadata, utm_source, timestamp)
           VALUES (gen_random_uuid()::text, $1, $2, $3, '{"amount": 8}', $4, $5)`,
          { bind: [own, buyer, type, utm, new Date(DAY + minute * 60_000)], transaction },
        );
    });
    // Stored after the purchase, though earlier in time: one fold takes all three, and this touch does not count.
    await store(own, { contact: buyer, type: "page_view", minute: 3, utm: "ads" });
    expect(await foldEvents(true)).toBe(3);
    const [conversion] = await rows<{ keys: string[] }>(
      `SELECT keys FROM analytics_contact_conversions WHERE workspace_id = $1`,
      [own],
    );
    expect(conversion.keys).toEqual(["news"]);
    expect((await sums(own))["attr.last_touch.conversions.purchase"]).toBe(1);
  });

  test("the pending events of a workspace deleted before the fold are dropped with it", async () => {
    const { id: gone, contacts } = await workspaceWith(1);
    await store(gone, { contact: contacts[0], type: "purchase", minute: 1, metadata: { amount: 3 } });
    await (await database()).query(`DELETE FROM workspaces WHERE id = $1`, { bind: [gone] });
    expect(await pending(gone)).toBe(1);
    expect(await foldEvents(true)).toBe(1);
    expect(await pending(gone)).toBe(0);
    expect(await sums(gone)).toEqual({});
    expect(await contactRows("analytics_contact_firsts", gone)).toEqual([]);
  });

  test("while another replica derives events, the timer's fold skips its turn and an answer waits for it", async () => {
    const { id: own, contacts } = await workspaceWith(1);
    await store(own, { contact: contacts[0], type: "page_view", minute: 1 });
    const other = new Client({ connectionString: app.databaseUrl });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query("SELECT pg_advisory_xact_lock($1)", [EVENTS_FOLD_LOCK]);
      expect(await foldEvents(false)).toBe(0);
      expect(await pending(own)).toBe(1);
      let answered = false;
      const waiting = foldEvents(true).then((folded) => {
        answered = true;
        return folded;
      });
      // Its session queued on the lock, not answered.
      await waitFor(
        async () =>
          (
            await rows<{ n: string }>(
              `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
              [EVENTS_FOLD_LOCK],
            )
          )[0].n === "1",
        10_000,
        "the answer's fold to wait for the lock",
      );
      expect(answered).toBe(false);
      await other.query("COMMIT");
      expect(await waiting).toBe(1);
    } finally {
      await other.end();
    }
    expect(await pending(own)).toBe(0);
    expect(await sums(own)).toEqual({ events: 1 });
  });

  test("a rebuild takes its days' pending events and counts them from their rows, once", async () => {
    const { id: own, contacts } = await workspaceWith(1);
    for (const minute of [1, 2, 3]) await store(own, { contact: contacts[0], type: "page_view", minute });
    expect(await pending(own)).toBe(3);
    const done = await rebuildRollups(asWorkspaceId(own), {
      from: new Date(DAY),
      to: new Date(DAY + 86_400_000),
    });
    expect(done.events).not.toBeNull();
    expect(await pending(own)).toBe(0);
    await foldRollups();
    expect(await sums(own)).toEqual({ events: 3 });
    expect(await contactRows("analytics_contact_activity", own)).toEqual([{ contact_id: contacts[0] }]);
  });
});
