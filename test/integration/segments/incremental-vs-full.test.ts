import { QueryTypes } from "sequelize";
import { SYSTEM } from "../../../lib/access";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import type { Condition, FilterGroup } from "../../../services/segments/filter-schema";
import { dependencyLevels, recomputeSegment } from "../../../services/segments/membership";
import { loadDynamicSegments } from "../../../services/segments/membership.repo";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { seededRandom, type Rng } from "../../helpers/rng";

/**
 * Randomised: contacts and events change; after each change only the
 * incremental evaluation runs. At the end a full recompute of every segment
 * must find nothing to add or remove.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "jobs", "segments", "scoring"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

const PLANS = ["pro", "free", "team", null] as const;
const TAGS = ["a", "b", "c"];
const COUNTRIES = ["DE", "FR", "US"];
const TYPES = ["purchase", "visit"];

function randomCondition(r: Rng, earlier: string[], depth: number): Condition {
  const kind = r.int(0, depth < 2 ? 9 : 7);
  switch (kind) {
    case 0:
      return {
        field: "attributes.plan",
        operator: r.pick(["eq", "neq", "in", "not_in", "is_set"] as const),
        value: undefined,
      };
    case 1:
      return { field: "score", operator: r.pick(["gt", "lte", "between"] as const), value: undefined };
    case 2:
      return {
        field: "tags",
        operator: r.pick(["contains", "not_contains", "in", "is_not_set"] as const),
        value: undefined,
      };
    case 3:
      return { field: "country", operator: r.pick(["eq", "not_in", "is_set"] as const), value: undefined };
    case 4:
      return { field: "createdAt", operator: "within_last", value: { days: r.int(5, 40) } };
    case 5:
    case 6: {
      const count = r.pick([undefined, { gte: r.int(1, 3) }, { lte: r.int(0, 2) }, { eq: r.int(0, 2) }]);
      return {
        event: r.pick(TYPES),
        operator: r.pick(["performed", "not_performed"] as const),
        ...(count ? { count } : {}),
        ...(r.next() < 0.5 ? { within: { days: r.int(3, 30) } } : {}),
        ...(r.next() < 0.5
          ? { where: [{ field: "metadata.amount", operator: "gt" as const, value: r.int(10, 90) }] }
          : {}),
      };
    }
    case 7:
      return earlier.length
        ? { segment: r.pick(earlier), operator: r.pick(["in", "not_in"] as const) }
        : { field: "email", operator: "is_set" };
    default:
      return {
        match: r.pick(["all", "any"] as const),
        conditions: Array.from({ length: r.int(1, 3) }, () => randomCondition(r, earlier, depth + 1)),
      };
  }
}

/** Fill in values that fit each operator. */
function withValues(c: Condition, r: Rng): Condition {
  if ("conditions" in c) return { ...c, conditions: c.conditions.map((x) => withValues(x, r)) };
  if (!("field" in c) || c.value !== undefined || c.operator === "is_set" || c.operator === "is_not_set")
    return c;
  if (c.field === "attributes.plan") {
    const plans = ["pro", "free", "team"];
    return {
      ...c,
      value: c.operator === "in" || c.operator === "not_in" ? [r.pick(plans), r.pick(plans)] : r.pick(plans),
    };
  }
  if (c.field === "score")
    return { ...c, value: c.operator === "between" ? [r.int(-10, 20), r.int(20, 60)] : r.int(-10, 60) };
  if (c.field === "tags") return { ...c, value: c.operator === "in" ? [r.pick(TAGS)] : r.pick(TAGS) };
  if (c.field === "country")
    return { ...c, value: c.operator === "not_in" ? [r.pick(COUNTRIES)] : r.pick(COUNTRIES) };
  return c;
}

test.each([1, 2, 3])("incremental membership equals a full recompute (seed %i)", async (seed) => {
  const r = seededRandom(seed);
  const sequelize = await database();
  const ws = ctx.workspaceId;
  const meta = { meta: { principal: SYSTEM, workspaceId: ws } };

  const contacts: string[] = [];
  for (let i = 0; i < 120; i += 1) contacts.push(newId());
  await sequelize.query(
    `INSERT INTO contacts (id, workspace_id, email, country, tags, attributes, score, created_at)
     SELECT id, $1, id || '@x.test', c, t::text[], a::jsonb, s, now() - make_interval(days => d)
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[]) AS u(id, c, t, a, s, d)`,
    {
      bind: [
        ws,
        contacts,
        contacts.map(() => r.pick(COUNTRIES)),
        contacts.map(() => `{${TAGS.filter(() => r.next() < 0.4).join(",")}}`),
        contacts.map(() => JSON.stringify({ plan: r.pick(PLANS) })),
        contacts.map(() => r.int(-10, 60)),
        contacts.map(() => r.int(0, 60)),
      ],
    },
  );
  const addEvent = async (contactId: string) => {
    const id = newId();
    const type = r.pick(TYPES);
    await sequelize.query(
      `INSERT INTO events (id, workspace_id, contact_id, type, metadata, timestamp)
       VALUES ($1, $2, $3, $4, $5::jsonb, now() - make_interval(days => $6))`,
      { bind: [id, ws, contactId, type, JSON.stringify({ amount: r.int(0, 100) }), r.int(0, 40)] },
    );
    return { id, type };
  };
  for (let i = 0; i < 200; i += 1) await addEvent(r.pick(contacts));

  // Segments, each possibly referencing earlier ones.
  const segmentIds: string[] = [];
  for (let i = 0; i < 8; i += 1) {
    const filter: FilterGroup = {
      match: r.pick(["all", "any"] as const),
      conditions: Array.from({ length: r.int(1, 3) }, () => withValues(randomCondition(r, segmentIds, 0), r)),
    };
    const res = await ctx.owner.client.post(`${ctx.ws}/segments`, { name: `S${seed}-${i}`, filter });
    expect([res.status, res.body.details]).toEqual([201, undefined]);
    segmentIds.push(res.body.id);
  }

  // Changes, each followed only by the incremental evaluation the service would run.
  // Mixed changes, then a run of events only, then score changes only: a step that
  // evaluated too little cannot be hidden by a later full evaluation of the contact.
  const plan = [
    ...Array.from({ length: 120 }, () => r.int(0, 4)),
    ...Array.from({ length: 80 }, () => 0),
    ...Array.from({ length: 40 }, () => 1),
  ];
  for (const what of plan) {
    const id = r.pick(contacts);
    if (what === 0) {
      const event = await addEvent(id);
      await app.broker.call("segments.evaluateContact", { contactId: id, eventId: event.id }, meta);
    } else if (what === 1) {
      await sequelize.query(`UPDATE contacts SET score = $2 WHERE id = $1`, { bind: [id, r.int(-10, 60)] });
      await app.broker.call("segments.evaluateContact", { contactId: id, scoreChanged: true }, meta);
    } else if (what === 2) {
      await sequelize.query(`UPDATE contacts SET attributes = $2::jsonb, country = $3 WHERE id = $1`, {
        bind: [id, JSON.stringify({ plan: r.pick(PLANS) }), r.pick(COUNTRIES)],
      });
      await app.broker.call("segments.evaluateContacts", { contactIds: [id] }, meta);
    } else if (what === 3) {
      const batch = [id, r.pick(contacts), r.pick(contacts)];
      await sequelize.query(`UPDATE contacts SET tags = $2::text[] WHERE id = ANY($1::text[])`, {
        bind: [batch, `{${TAGS.filter(() => r.next() < 0.5).join(",")}}`],
      });
      await app.broker.call("segments.evaluateContacts", { contactIds: batch }, meta);
    } else {
      // A new contact enters the workspace.
      const fresh = newId();
      contacts.push(fresh);
      await sequelize.query(
        `INSERT INTO contacts (id, workspace_id, email, country, attributes, score) VALUES ($1, $2, $3, $4, $5::jsonb, $6)`,
        {
          bind: [
            fresh,
            ws,
            `${fresh}@x.test`,
            r.pick(COUNTRIES),
            JSON.stringify({ plan: r.pick(PLANS) }),
            r.int(-10, 60),
          ],
        },
      );
      await app.broker.call("segments.evaluateContacts", { contactIds: [fresh] }, meta);
    }
  }

  // The full recompute (dependency order) must find the incremental result exact.
  const mine = (await loadDynamicSegments(ws)).filter((s) => segmentIds.includes(s.id));
  const differences: Array<{ id: string; added: number; removed: number }> = [];
  let members = 0;
  for (const level of dependencyLevels(mine)) {
    for (const s of level) {
      const result = await recomputeSegment(ws, s.id, s.filter);
      members += result.memberCount;
      if (result.added || result.removed)
        differences.push({ id: s.id, added: result.added, removed: result.removed });
    }
  }
  expect(differences).toEqual([]);
  // The data is not degenerate: some segments have members.
  expect(members).toBeGreaterThan(0);

  const [{ n }] = await sequelize.query<{ n: string }>(
    `SELECT count(*) AS n FROM segment_membership_log WHERE segment_id = ANY($1::text[])`,
    { bind: [segmentIds], type: QueryTypes.SELECT },
  );
  expect(Number(n)).toBeGreaterThan(0);
});
