import pLimit from "p-limit";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { SCOPES } from "../../../lib/access";

/**
 * Every operation of /api/openapi, called with a fixed corpus of hostile
 * input: malformed JSON, wrong content types, a body that lies about its
 * encoding, NUL characters and unpaired surrogates, integers past any
 * column, numbers past what JSON carries (1e400 reads as Infinity), huge
 * strings, runaway nesting, prototype keys, 100,000 invalid items in every
 * list field and 100,000 invalid keys in every object field (and as the
 * whole body), hostile queries and path segments; signed in as the
 * workspace's owner, with an API key holding every scope, and anonymously. No answer may be a 5xx, and the
 * service must be healthy afterwards. Plain fetch (not the test client):
 * these answers are not meant to match the documented success shapes.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let apiKey: string;

beforeAll(async () => {
  app = await startApp({ env: { CRON_SECRET: "fuzz-cron-secret" } });
  ctx = await ownerWithWorkspace(app.baseUrl);
  apiKey = (await ctx.owner.client.post(`${ctx.ws}/keys`, { name: "fuzz", scopes: [...SCOPES] })).body.key;
});
afterAll(() => app.stop());

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
  bodyFields: string[];
  /** Body fields that may be a list, and those that may be an object. */
  listFields: string[];
  objectFields: string[];
}

interface Probe {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** A body near the limit: sent as the owner only, whom no refusal before validation stops. */
  large?: boolean;
}

const HUGE = "x".repeat(2 * 1024 * 1024);
const LONG = "y".repeat(100_000);
const DEEP = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
const DEEP_OBJECT = `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`;
/** 100,000 items, or keys, that fail most schemas; each within the 1 MB body limit. */
const INVALID_ITEMS = `[${Array(100_000).fill('"a"').join(",")}]`;
const INVALID_KEYS = `{${Array.from({ length: 100_000 }, (_, i) => `"${i.toString(36)}":0`).join(",")}}`;

/** Values that no field should turn into a 500, as JSON text. */
const HOSTILE_VALUES = [
  '"a\\u0000b"',
  '"\\ud800"',
  '"\\udfff tail"',
  "2147483648",
  "-2147483649",
  "1e308",
  "1e400",
  "-1e400",
  "-1",
  "0.5",
  "true",
  "null",
  "{}",
  "[]",
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  `"${LONG}"`,
  '"2026-13-45T99:99:99Z"',
  '"../../etc/passwd"',
  '"<script>alert(1)</script>"',
  '"\' OR 1=1 --"',
];

/** Whole bodies, each with its content type (and encoding). */
const HOSTILE_BODIES: Array<{ body: string; type: string; encoding?: string }> = [
  { body: '{"a":', type: "application/json" },
  { body: '{"a":1}', type: "text/plain" },
  { body: "<a>1</a>", type: "application/xml" },
  { body: "a=1&a=2&b[c]=3&__proto__[x]=1", type: "application/x-www-form-urlencoded" },
  { body: '{"email":"x@example.test"}', type: "application/json", encoding: "gzip" },
  { body: '{"email":"x@example.test"}', type: "application/json", encoding: "br" },
  { body: "[]", type: "application/json" },
  { body: "null", type: "application/json" },
  { body: '"just a string"', type: "application/json" },
  { body: "123", type: "application/json" },
  { body: DEEP, type: "application/json" },
  { body: DEEP_OBJECT, type: "application/json" },
  { body: `{"name":"${HUGE}"}`, type: "application/json" },
  { body: '{"a":"\\u0000","\\u0000":1}', type: "application/json" },
  { body: "\uFEFF{}", type: "application/json" },
  {
    body: '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\n\0\r\n--x--',
    type: "multipart/form-data; boundary=x",
  },
  { body: "--x\r\n", type: "multipart/form-data" },
];

const HOSTILE_QUERIES = [
  "page=1e20&limit=1e20",
  "page=-1&limit=-5",
  "page=abc&limit=%00",
  "sort=__proto__",
  "sort=constructor&order=sideways",
  "search=%00",
  "q=%ED%A0%80",
  "filter%5B%00%5D=1",
  "a[b][c][d][e][f]=1",
  `search=${"z".repeat(10_000)}`,
  "since=not-a-date&until=2026-02-30",
  "from=9999999999999999&to=-9999999999999999",
  "page=1e400&limit=-1e400",
];

/** Each query parameter alone; the numbers past a column or what JSON carries must be 400s, not 500s. */
const HOSTILE_QUERY_VALUES = [
  "%00",
  "%ED%A0%80",
  "1e20",
  "1e400",
  "-1e400",
  "NaN",
  "Infinity",
  "__proto__",
  "-1",
];

const HOSTILE_SEGMENTS = [
  "%00",
  "..%2F..%2Fetc",
  "%ED%A0%80",
  "z".repeat(5_000),
  "%25",
  "-1",
  "1e400",
  "__proto__",
];

async function operations(): Promise<Operation[]> {
  const doc = (await (await fetch(`${app.baseUrl}/api/openapi`)).json()) as {
    paths: Record<
      string,
      Record<string, { parameters?: Array<{ name: string; in: string }>; requestBody?: any }>
    >;
    components: { schemas: Record<string, any> };
  };
  const resolve = (schema: any): any =>
    schema?.$ref ? resolve(doc.components.schemas[schema.$ref.split("/").pop()]) : (schema ?? {});
  /** The JSON types a schema admits, through refs and unions. */
  const typesOf = (schema: any): string[] => {
    const node = resolve(schema);
    const own = Array.isArray(node.type) ? node.type : node.type ? [node.type] : [];
    return [...own, ...[...(node.anyOf ?? []), ...(node.oneOf ?? [])].flatMap(typesOf)];
  };
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = op.parameters ?? [];
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      const fields = Object.entries<any>(resolve(schema).properties ?? {});
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === "path").map((p) => p.name),
        queryParams: params.filter((p) => p.in === "query").map((p) => p.name),
        bodyFields: fields.map(([name]) => name),
        listFields: fields.filter(([, field]) => typesOf(field).includes("array")).map(([name]) => name),
        objectFields: fields.filter(([, field]) => typesOf(field).includes("object")).map(([name]) => name),
      });
    }
  }
  return ops.sort((a, b) => Number(endsContext(a)) - Number(endsContext(b)));
}

/**
 * Deletes and sign-out run last: a delete may remove the workspace the others run in, and a sign-out ends the
 * owner's session, after which every owner probe would stop at a 401 instead of reaching validation.
 */
const endsContext = (op: Operation) => op.method === "DELETE" || op.path.startsWith("/api/auth/signout");

function pathWith(op: Operation, segment?: string): string {
  let path = op.path;
  for (const name of op.pathParams) {
    const value =
      name === "workspaceId" && segment === undefined
        ? ctx.workspaceId
        : (segment ?? "00000000-0000-4000-8000-000000000000");
    path = path.replace(`{${name}}`, value);
  }
  return path;
}

function probes(op: Operation): Probe[] {
  const out: Probe[] = [];
  const base = `${app.baseUrl}${pathWith(op)}`;
  const hasBody = ["POST", "PUT", "PATCH"].includes(op.method);
  if (hasBody) {
    for (const { body, type, encoding } of HOSTILE_BODIES) {
      out.push({
        method: op.method,
        url: base,
        body,
        headers: { "content-type": type, ...(encoding ? { "content-encoding": encoding } : {}) },
      });
    }
    const fields = op.bodyFields.length ? op.bodyFields : ["name", "email"];
    for (const value of HOSTILE_VALUES) {
      const body = `{${fields.map((field) => `${JSON.stringify(field)}:${value}`).join(",")}}`;
      out.push({ method: op.method, url: base, body, headers: { "content-type": "application/json" } });
    }
    // As the whole body, then in one field at a time: two of these would pass the body limit.
    const huge = [
      INVALID_KEYS,
      ...op.listFields.map((field) => `{${JSON.stringify(field)}:${INVALID_ITEMS}}`),
      ...op.objectFields.map((field) => `{${JSON.stringify(field)}:${INVALID_KEYS}}`),
    ];
    for (const body of huge)
      out.push({
        method: op.method,
        url: base,
        body,
        headers: { "content-type": "application/json" },
        large: true,
      });
  }
  for (const query of HOSTILE_QUERIES) out.push({ method: op.method, url: `${base}?${query}`, headers: {} });
  for (const name of op.queryParams) {
    for (const value of HOSTILE_QUERY_VALUES) {
      out.push({ method: op.method, url: `${base}?${encodeURIComponent(name)}=${value}`, headers: {} });
    }
  }
  if (op.pathParams.length) {
    for (const segment of HOSTILE_SEGMENTS)
      out.push({ method: op.method, url: `${app.baseUrl}${pathWith(op, segment)}`, headers: {} });
  }
  return out;
}

// About 200 s alone; in full runs on a loaded machine (load 10-11) it took over 420 s.
test("no hostile request to any documented operation answers 5xx, and the service stays healthy", async () => {
  const ops = await operations();
  expect(ops.length).toBeGreaterThan(100);
  const sessionCookie = `next-auth.session-token=${ctx.owner.client.cookies.get("next-auth.session-token")}`;
  const identities: Array<Record<string, string>> = [
    { cookie: sessionCookie },
    { authorization: `Bearer ${apiKey}` },
    {},
  ];
  const failures: string[] = [];
  let requests = 0;
  const send = async ({ probe, who }: { probe: Probe; who: Record<string, string> }) => {
    requests += 1;
    const res = await fetch(probe.url, {
      method: probe.method,
      headers: {
        "x-forwarded-for": `198.18.${requests % 250}.${Math.floor(requests / 250) % 250}`,
        ...who,
        ...probe.headers,
      },
      body: probe.body,
      redirect: "manual",
    });
    const text = await res.text();
    if (res.status >= 500)
      failures.push(`${probe.method} ${probe.url.slice(0, 200)} → ${res.status} ${text.slice(0, 200)}`);
  };
  // Eight in flight at all times (a slow probe, a 2 MB body, holds one slot, not a batch); deletes and sign-out
  // after the rest.
  const limit = pLimit(8);
  const phases = [ops.filter((op) => !endsContext(op)), ops.filter(endsContext)];
  for (const [index, phase] of phases.entries()) {
    const jobs = phase.flatMap((op) =>
      // Every probe as the owner; a third of them with the key, a third anonymously.
      probes(op).flatMap((probe, i) => [
        { probe, who: identities[0] },
        ...(i % 3 === 1 && !probe.large ? [{ probe, who: identities[1] }] : []),
        ...(i % 3 === 2 && !probe.large ? [{ probe, who: identities[2] }] : []),
      ]),
    );
    await Promise.all(jobs.map((job) => limit(() => send(job))));
    if (index === 0) {
      // So the owner's probes reached validation and the handlers, not a 401.
      const session = await fetch(`${app.baseUrl}/api/auth/session`, { headers: { cookie: sessionCookie } });
      expect(((await session.json()) as { user?: { id: string } }).user?.id).toBe(ctx.owner.id);
    }
  }
  console.log(`fuzz: ${requests} requests over ${ops.length} operations, ${failures.length} answers of 5xx`);
  expect(failures).toEqual([]);
  const health = await fetch(`${app.baseUrl}/api/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ status: "ok" });
}, 600_000);
