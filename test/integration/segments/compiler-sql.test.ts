import { QueryTypes } from "sequelize";
import { newId } from "../../../lib/crypto";
import { Binds, database } from "../../../lib/database";
import { compileFilter } from "../../../services/segments/filter-compiler";
import { validateFilter, type Condition, type FilterGroup } from "../../../services/segments/filter-schema";
import { startApp, type TestApp } from "../../helpers/app";

/**
 * Every operator of every field type, run on real PostgreSQL in both
 * compile modes (row: one contact at a time; set: the whole workspace).
 * Both must give exactly the expected contacts.
 */
let app: TestApp;
const ws = newId();
const ids: Record<string, string> = {};
let segmentId: string;

async function sql(text: string, bind: unknown[] = []) {
  const sequelize = await database();
  return sequelize.query<Record<string, unknown>>(text, { bind, type: QueryTypes.SELECT });
}

beforeAll(async () => {
  app = await startApp({ services: ["segments"] });
  await sql(`INSERT INTO workspaces (id, name, slug) VALUES ($1, 'W', $1) RETURNING id`, [ws]);
  const company = newId();
  await sql(
    `INSERT INTO companies (id, workspace_id, name, employee_count) VALUES ($1, $2, 'Acme Inc', 250) RETURNING id`,
    [company, ws],
  );
  const seed = async (label: string, row: Record<string, unknown>) => {
    ids[label] = newId();
    await sql(
      `INSERT INTO contacts (id, workspace_id, email, external_id, first_name, last_name, score, tags, attributes, custom_fields,
                             consent, stage, company_id, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text[], $9::jsonb, $10::jsonb, $11::jsonb, $12, $13, now() - make_interval(days => $14))
       RETURNING id`,
      [
        ids[label],
        ws,
        row.email ?? null,
        row.externalId ?? null,
        row.firstName ?? null,
        row.lastName ?? null,
        row.score ?? 0,
        row.tags ?? [],
        JSON.stringify(row.attributes ?? {}),
        JSON.stringify(row.customFields ?? {}),
        JSON.stringify(row.consent ?? {}),
        row.stage ?? null,
        row.companyId ?? null,
        row.ageDays ?? 0,
      ],
    );
  };
  await seed("a", {
    email: "a@acme.com",
    firstName: "Ann",
    lastName: "Lee",
    score: 10,
    tags: ["vip", "beta"],
    attributes: {
      plan: "pro",
      seats: 5,
      signup: "2024-01-10T00:00:00Z",
      interests: ["golf", "chess"],
      flag: true,
      nested: { x: "1" },
    },
    customFields: { size: "L" },
    consent: { email: { status: "opted_in", source: "form", updatedAt: null } },
    stage: "lead",
    companyId: company,
    ageDays: 2,
  });
  await seed("b", {
    email: "b@acme.com",
    firstName: "Bob",
    score: 50,
    tags: ["beta"],
    attributes: { plan: "free", seats: "12", signup: "2023-05-01" },
    consent: { email: { status: "opted_out" } },
    ageDays: 40,
  });
  await seed("c", {
    email: "c@other.org",
    lastName: "O'Brien",
    score: -5,
    attributes: { plan: "Pro_%", signup: "not a date" },
    ageDays: 2400,
  });
  await seed("d", {
    externalId: "ext-1",
    score: 0,
    tags: ["vip"],
    attributes: { seats: 100, plan: null },
    stage: "customer",
    ageDays: 1,
  });

  const event = (
    label: string,
    type: string,
    daysAgo: number,
    metadata: Record<string, unknown> = {},
    pageUrl: string | null = null,
  ) =>
    sql(
      `INSERT INTO events (id, workspace_id, contact_id, type, metadata, page_url, timestamp)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, now() - make_interval(days => $7)) RETURNING id`,
      [newId(), ws, ids[label], type, JSON.stringify(metadata), pageUrl, daysAgo],
    );
  await event("a", "purchase", 1, { amount: 50 });
  await event("a", "purchase", 2, { amount: 150 });
  await event("a", "purchase", 3, { amount: 200 });
  await event("b", "purchase", 60, { amount: 500 });
  await event("c", "page_view", 1, {}, "/pricing");
  await event("c", "page_view", 1, {}, "/home");

  segmentId = newId();
  await sql(
    `INSERT INTO segments (id, workspace_id, name, type) VALUES ($1, $2, 'S', 'static') RETURNING id`,
    [segmentId, ws],
  );
  await sql(
    `INSERT INTO segment_members (segment_id, contact_id) VALUES ($1, $2), ($1, $3) RETURNING contact_id`,
    [segmentId, ids.a, ids.c],
  );
});
afterAll(() => app.stop());

async function matches(filter: FilterGroup): Promise<{ set: string[]; row: string[] }> {
  const { issues } = validateFilter(filter);
  expect(issues).toEqual([]);
  const label = Object.fromEntries(Object.entries(ids).map(([k, v]) => [v, k]));

  const setBinds = new Binds([ws]);
  const setPredicate = compileFilter(filter, setBinds, { mode: "set", workspaceParam: "$1" });
  const setRows = await sql(
    `SELECT c.id FROM contacts c WHERE c.workspace_id = $1 AND ${setPredicate}`,
    setBinds.values,
  );

  const rowBinds = new Binds([ws, Object.values(ids)]);
  const rowPredicate = compileFilter(filter, rowBinds, { mode: "row", workspaceParam: "$1" });
  const rowRows = await sql(
    `SELECT c.id, ${rowPredicate} AS m FROM contacts c WHERE c.workspace_id = $1 AND c.id = ANY($2::text[])`,
    rowBinds.values,
  );
  return {
    set: setRows.map((r) => label[r.id as string]).sort(),
    row: rowRows
      .filter((r) => r.m === true)
      .map((r) => label[r.id as string])
      .sort(),
  };
}

const one = (condition: Condition): FilterGroup => ({ match: "all", conditions: [condition] });
const ALL = ["a", "b", "c", "d"];

const cases: Array<[string, FilterGroup, string[]]> = [
  // text (email is matched lower-cased)
  ["email eq", one({ field: "email", operator: "eq", value: "A@ACME.COM" }), ["a"]],
  [
    "email neq (unset included)",
    one({ field: "email", operator: "neq", value: "a@acme.com" }),
    ["b", "c", "d"],
  ],
  ["email contains", one({ field: "email", operator: "contains", value: "ACME" }), ["a", "b"]],
  ["email not_contains", one({ field: "email", operator: "not_contains", value: "acme" }), ["c", "d"]],
  ["email starts_with", one({ field: "email", operator: "starts_with", value: "b@" }), ["b"]],
  ["email ends_with", one({ field: "email", operator: "ends_with", value: "@acme.com" }), ["a", "b"]],
  ["firstName in", one({ field: "firstName", operator: "in", value: ["Ann", "Bob"] }), ["a", "b"]],
  ["firstName not_in", one({ field: "firstName", operator: "not_in", value: ["Ann"] }), ["b", "c", "d"]],
  ["firstName is_set", one({ field: "firstName", operator: "is_set" }), ["a", "b"]],
  ["firstName is_not_set", one({ field: "firstName", operator: "is_not_set" }), ["c", "d"]],
  ["a quote is a value", one({ field: "lastName", operator: "contains", value: "'" }), ["c"]],
  ["% is literal", one({ field: "firstName", operator: "contains", value: "%" }), []],
  ["stage eq", one({ field: "stage", operator: "eq", value: "customer" }), ["d"]],
  ["externalId eq", one({ field: "externalId", operator: "eq", value: "ext-1" }), ["d"]],
  // number
  ["score eq", one({ field: "score", operator: "eq", value: 10 }), ["a"]],
  ["score neq", one({ field: "score", operator: "neq", value: 10 }), ["b", "c", "d"]],
  ["score gt", one({ field: "score", operator: "gt", value: 0 }), ["a", "b"]],
  ["score gte", one({ field: "score", operator: "gte", value: 10 }), ["a", "b"]],
  ["score lt", one({ field: "score", operator: "lt", value: 0 }), ["c"]],
  ["score lte", one({ field: "score", operator: "lte", value: 0 }), ["c", "d"]],
  ["score between", one({ field: "score", operator: "between", value: [0, 10] }), ["a", "d"]],
  ["score in", one({ field: "score", operator: "in", value: [10, 50] }), ["a", "b"]],
  ["score not_in", one({ field: "score", operator: "not_in", value: [10] }), ["b", "c", "d"]],
  ["score is_set", one({ field: "score", operator: "is_set" }), ALL],
  ["score is_not_set", one({ field: "score", operator: "is_not_set" }), []],
  // date
  [
    "createdAt within_last",
    one({ field: "createdAt", operator: "within_last", value: { days: 7 } }),
    ["a", "d"],
  ],
  ["createdAt before", one({ field: "createdAt", operator: "before", value: "2021-01-01" }), ["c"]],
  [
    "createdAt after",
    one({ field: "createdAt", operator: "after", value: "2021-01-01T00:00:00Z" }),
    ["a", "b", "d"],
  ],
  [
    "createdAt between",
    one({ field: "createdAt", operator: "between", value: ["2000-01-01", "2021-01-01"] }),
    ["c"],
  ],
  ["createdAt is_set", one({ field: "createdAt", operator: "is_set" }), ALL],
  ["updatedAt is_not_set", one({ field: "updatedAt", operator: "is_not_set" }), []],
  // tags
  ["tags contains", one({ field: "tags", operator: "contains", value: "vip" }), ["a", "d"]],
  ["tags not_contains", one({ field: "tags", operator: "not_contains", value: "vip" }), ["b", "c"]],
  ["tags in (any of)", one({ field: "tags", operator: "in", value: ["beta", "x"] }), ["a", "b"]],
  ["tags not_in", one({ field: "tags", operator: "not_in", value: ["beta"] }), ["c", "d"]],
  ["tags is_set", one({ field: "tags", operator: "is_set" }), ["a", "b", "d"]],
  ["tags is_not_set", one({ field: "tags", operator: "is_not_set" }), ["c"]],
  // JSON attributes / custom fields
  ["attr eq", one({ field: "attributes.plan", operator: "eq", value: "pro" }), ["a"]],
  ["attr neq", one({ field: "attributes.plan", operator: "neq", value: "pro" }), ["b", "c", "d"]],
  ["attr in", one({ field: "attributes.plan", operator: "in", value: ["pro", "free"] }), ["a", "b"]],
  ["attr not_in", one({ field: "attributes.plan", operator: "not_in", value: ["pro"] }), ["b", "c", "d"]],
  ["attr starts_with", one({ field: "attributes.plan", operator: "starts_with", value: "PR" }), ["a", "c"]],
  ["attr ends_with", one({ field: "attributes.plan", operator: "ends_with", value: "ee" }), ["b"]],
  [
    "attr contains literal wildcards",
    one({ field: "attributes.plan", operator: "contains", value: "_%" }),
    ["c"],
  ],
  ["attr array contains", one({ field: "attributes.interests", operator: "contains", value: "golf" }), ["a"]],
  [
    "attr not_contains",
    one({ field: "attributes.interests", operator: "not_contains", value: "golf" }),
    ["b", "c", "d"],
  ],
  [
    "attr gt (numeric strings count)",
    one({ field: "attributes.seats", operator: "gt", value: 10 }),
    ["b", "d"],
  ],
  ["attr gte", one({ field: "attributes.seats", operator: "gte", value: 5 }), ["a", "b", "d"]],
  ["attr lt", one({ field: "attributes.seats", operator: "lt", value: 6 }), ["a"]],
  ["attr lte", one({ field: "attributes.seats", operator: "lte", value: 12 }), ["a", "b"]],
  [
    "attr between numbers",
    one({ field: "attributes.seats", operator: "between", value: [5, 12] }),
    ["a", "b"],
  ],
  ["attr eq number", one({ field: "attributes.seats", operator: "eq", value: 5 }), ["a"]],
  ["attr before", one({ field: "attributes.signup", operator: "before", value: "2024-01-01" }), ["b"]],
  ["attr after", one({ field: "attributes.signup", operator: "after", value: "2024-01-01" }), ["a"]],
  ["attr within_last", one({ field: "attributes.signup", operator: "within_last", value: { days: 7 } }), []],
  [
    "attr between dates",
    one({ field: "attributes.signup", operator: "between", value: ["2023-01-01", "2023-12-31"] }),
    ["b"],
  ],
  ["attr eq boolean", one({ field: "attributes.flag", operator: "eq", value: true }), ["a"]],
  ["attr nested path", one({ field: "attributes.nested.x", operator: "eq", value: "1" }), ["a"]],
  ["attr is_set (null is unset)", one({ field: "attributes.plan", operator: "is_set" }), ["a", "b", "c"]],
  ["attr is_not_set", one({ field: "attributes.plan", operator: "is_not_set" }), ["d"]],
  ["customFields eq", one({ field: "customFields.size", operator: "eq", value: "L" }), ["a"]],
  // consent
  ["consent eq", one({ field: "consent.email", operator: "eq", value: "opted_in" }), ["a"]],
  ["consent neq", one({ field: "consent.email", operator: "neq", value: "opted_in" }), ["b", "c", "d"]],
  ["consent unknown", one({ field: "consent.email", operator: "eq", value: "unknown" }), ["c", "d"]],
  [
    "consent in",
    one({ field: "consent.email", operator: "in", value: ["opted_out", "unknown"] }),
    ["b", "c", "d"],
  ],
  [
    "consent not_in",
    one({ field: "consent.email", operator: "not_in", value: ["opted_in"] }),
    ["b", "c", "d"],
  ],
  // company
  ["company name", one({ field: "company.name", operator: "eq", value: "Acme Inc" }), ["a"]],
  ["company employees", one({ field: "company.employeeCount", operator: "gt", value: 100 }), ["a"]],
  ["company name unset", one({ field: "company.name", operator: "is_not_set" }), ["b", "c", "d"]],
  // behaviour
  ["performed", one({ event: "purchase", operator: "performed" }), ["a", "b"]],
  ["not_performed", one({ event: "purchase", operator: "not_performed" }), ["c", "d"]],
  ["count gte", one({ event: "purchase", operator: "performed", count: { gte: 2 } }), ["a"]],
  ["count gte 0", one({ event: "purchase", operator: "performed", count: { gte: 0 } }), ALL],
  ["count lte", one({ event: "purchase", operator: "performed", count: { lte: 1 } }), ["b", "c", "d"]],
  ["count eq", one({ event: "purchase", operator: "performed", count: { eq: 1 } }), ["b"]],
  ["count eq 0", one({ event: "purchase", operator: "performed", count: { eq: 0 } }), ["c", "d"]],
  [
    "not_performed at least 3",
    one({ event: "purchase", operator: "not_performed", count: { gte: 3 } }),
    ["b", "c", "d"],
  ],
  ["within", one({ event: "purchase", operator: "performed", within: { days: 30 } }), ["a"]],
  [
    "not_performed within",
    one({ event: "purchase", operator: "not_performed", within: { days: 30 } }),
    ["b", "c", "d"],
  ],
  [
    "metadata where",
    one({
      event: "purchase",
      operator: "performed",
      where: [{ field: "metadata.amount", operator: "gt", value: 100 }],
    }),
    ["a", "b"],
  ],
  [
    "where + count",
    one({
      event: "purchase",
      operator: "performed",
      count: { gte: 2 },
      where: [{ field: "metadata.amount", operator: "gt", value: 100 }],
    }),
    ["a"],
  ],
  [
    "event own field",
    one({
      event: "page_view",
      operator: "performed",
      where: [{ field: "pageUrl", operator: "eq", value: "/pricing" }],
    }),
    ["c"],
  ],
  // groups and membership
  [
    "any",
    {
      match: "any",
      conditions: [
        { field: "score", operator: "gt", value: 20 },
        { field: "tags", operator: "contains", value: "vip" },
      ],
    },
    ["a", "b", "d"],
  ],
  ["empty all", { match: "all", conditions: [] }, ALL],
  ["empty any", { match: "any", conditions: [] }, []],
  [
    "nested",
    {
      match: "all",
      conditions: [
        { field: "email", operator: "ends_with", value: "@acme.com" },
        {
          match: "any",
          conditions: [
            { field: "score", operator: "gt", value: 20 },
            { field: "firstName", operator: "eq", value: "Ann" },
          ],
        },
      ],
    },
    ["a", "b"],
  ],
  [
    "behaviour inside any",
    {
      match: "any",
      conditions: [
        { event: "page_view", operator: "performed" },
        { event: "purchase", operator: "performed", count: { gte: 3 } },
      ],
    },
    ["a", "c"],
  ],
];

test.each(cases)("%s", async (_name, filter, expected) => {
  const got = await matches(filter);
  expect(got.set).toEqual(expected);
  expect(got.row).toEqual(expected);
});

test("segment membership in / not_in", async () => {
  const inS = await matches(one({ segment: segmentId, operator: "in" }));
  expect(inS).toEqual({ set: ["a", "c"], row: ["a", "c"] });
  const notInS = await matches(one({ segment: segmentId, operator: "not_in" }));
  expect(notInS).toEqual({ set: ["b", "d"], row: ["b", "d"] });
});

test("injection attempts in values are plain data", async () => {
  const hostile = [
    "'; DROP TABLE contacts; --",
    "a' OR '1'='1",
    "$1",
    "\\'); DELETE FROM contacts; --",
    "%' OR 1=1 --",
  ];
  for (const value of hostile) {
    expect(await matches(one({ field: "email", operator: "eq", value }))).toEqual({ set: [], row: [] });
    expect(await matches(one({ field: "attributes.plan", operator: "contains", value }))).toEqual({
      set: [],
      row: [],
    });
    expect(await matches(one({ field: "attributes.plan", operator: "in", value: [value] }))).toEqual({
      set: [],
      row: [],
    });
    expect(await matches(one({ event: value, operator: "performed" }))).toEqual({ set: [], row: [] });
    expect(await matches(one({ field: `attributes.${value}`, operator: "is_set" }))).toEqual({
      set: [],
      row: [],
    });
  }
  const [{ n }] = await sql(`SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1`, [ws]);
  expect(n).toBe(4);
});
