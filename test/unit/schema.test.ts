import { Type } from "@sinclair/typebox";
import { ServiceBroker } from "moleculer";
import { defineAction, DeclaredStatusMiddleware } from "../../lib/define-service";
import { toHttpError } from "../../lib/errors";
import { buildOpenApi } from "../../lib/openapi";
import { Paginated, PageQuery } from "../../lib/pagination";
import {
  compileParamsChecker,
  Component,
  Int32,
  isJsonSchema,
  MAX_ISSUES,
  MAX_NESTING,
  MAX_OBJECT_KEYS,
  Nullable,
  Params,
  schemaIssues,
  Trimmed,
  unstorableInput,
} from "../../lib/schema";
import { paramsChecker, validatorMiddleware } from "../../lib/validator";

describe("params schemas (TypeBox through Ajv)", () => {
  const check = compileParamsChecker(
    Params({
      name: Trimmed({ minLength: 1, maxLength: 10 }),
      position: Type.Optional(Int32()),
      note: Type.Optional(Nullable(Type.String())),
      attributes: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      ...PageQuery,
    }),
  );

  it("reads text as the numbers and booleans a schema asks for, but never turns a number into text", () => {
    const typed = compileParamsChecker(
      Params({
        name: Type.Optional(Type.String()),
        count: Type.Optional(Int32()),
        limit: Type.Optional(Nullable(Int32())),
        on: Type.Optional(Type.Boolean()),
        ids: Type.Optional(Type.Array(Type.String())),
      }),
    );
    const query: Record<string, unknown> = { count: "5", limit: "7", on: "true", ids: "a" };
    expect(typed(query)).toBe(true);
    expect(query).toEqual({ count: 5, limit: 7, on: true, ids: ["a"] });
    expect(typed({ name: 42 })).toEqual([expect.objectContaining({ field: "name", type: "type" })]);
    expect(typed({ name: true, count: "5" })).toEqual([expect.objectContaining({ field: "name" })]);
    expect(typed({ count: "five" })).toEqual([expect.objectContaining({ field: "count" })]);
    // JSON says what is a list: one value is not read as a list of one there
    expect(typed({ ids: "a" }, true)).toEqual([expect.objectContaining({ field: "ids" })]);
    expect(typed({ ids: ["a"], count: "5" }, true)).toBe(true);
  });

  it("says what a pattern means when the schema gives an errorMessage (ajv-errors)", () => {
    const coded = compileParamsChecker(
      Params({
        currency: Type.String({
          pattern: "^[A-Z]{3}$",
          errorMessage: { pattern: "must be an ISO 4217 code such as USD" },
        }),
      }),
    );
    expect(coded({ currency: "dollars" })).toEqual([
      expect.objectContaining({ field: "currency", message: "must be an ISO 4217 code such as USD" }),
    ]);
    expect(coded({ currency: "USD" })).toBe(true);
  });

  it("removes fields the schema does not declare, at any depth it closes", () => {
    const params: Record<string, unknown> = {
      name: "a",
      workspaceId: "other",
      role: "OWNER",
      attributes: { x: 1 },
    };
    expect(check(params)).toBe(true);
    expect(params).toEqual({ name: "a", attributes: { x: 1 } });
  });

  it("coerces query-string numbers and trims declared strings", () => {
    const params: Record<string, unknown> = { name: "  padded ", page: "2", limit: "10" };
    expect(check(params)).toBe(true);
    expect(params).toEqual({ name: "padded", page: 2, limit: 10 });
  });

  it("keeps null as null for a nullable string (no coercion to an empty string)", () => {
    const params: Record<string, unknown> = { name: "a", note: null };
    expect(check(params)).toBe(true);
    expect(params.note).toBeNull();
  });

  it("refuses integers beyond PostgreSQL's integer column and pages beyond it", () => {
    expect(check({ name: "a", position: 2147483648 })).toEqual([
      expect.objectContaining({ field: "position", type: "maximum" }),
    ]);
    expect(check({ name: "a", page: "1e20" })).toEqual([expect.objectContaining({ field: "page" })]);
  });

  it("names the missing and the nested failing field", () => {
    const nested = compileParamsChecker(
      Params({ address: Type.Object({ city: Type.String({ maxLength: 3 }) }) }),
    );
    expect(nested({})).toEqual([expect.objectContaining({ field: "address", type: "required" })]);
    expect(nested({ address: { city: "Amsterdam" } })).toEqual([
      expect.objectContaining({ field: "address.city", type: "maxLength" }),
    ]);
  });

  it("tells TypeBox schemas from fastest-validator rules, also after a NATS hop", () => {
    const schema = Params({ a: Type.String() });
    expect(isJsonSchema(schema)).toBe(true);
    expect(isJsonSchema(JSON.parse(JSON.stringify(schema)))).toBe(true);
    expect(isJsonSchema({ $$strict: "remove", a: "string" })).toBe(false);
    expect(isJsonSchema({ type: "string", properties: "x" })).toBe(false);
  });

  it("checks results without changing them", () => {
    const result = Type.Object({ id: Type.String(), count: Type.Integer() });
    expect(schemaIssues(result, { id: "a", count: 1 })).toEqual([]);
    expect(schemaIssues(result, { id: "a", count: "1" })).toEqual([
      { field: "count", message: "must be integer" },
    ]);
  });

  it("names an unknown field of a closed object by its path", () => {
    const closed = Type.Object(
      { config: Type.Object({ host: Type.String() }, { additionalProperties: false }) },
      { additionalProperties: false },
    );
    expect(schemaIssues(closed, { config: { host: "h", tls: true } })).toEqual([
      { field: "config.tls", message: "is not a known field" },
    ]);
  });
});

describe("refusing oversized lists and objects before their items", () => {
  const check = compileParamsChecker(
    Params({
      locales: Type.Optional(
        Type.Array(Type.String({ pattern: "^[a-z]{2}$", errorMessage: "must be a language" }), {
          maxItems: 20,
        }),
      ),
      attributes: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 3 }))),
      rows: Type.Optional(
        Type.Array(Type.Object({ tags: Type.Array(Type.String(), { maxItems: 2 }) }), { maxItems: 5 }),
      ),
      either: Type.Optional(
        Type.Union([Type.Array(Type.String(), { maxItems: 1 }), Type.Array(Type.Integer(), { maxItems: 3 })]),
      ),
      amount: Type.Optional(Type.Number()),
    }),
  );
  // A guard against the quadratic path (100,000 items took minutes), not a speed target: loose enough for a
  // loaded machine, far below what the quadratic path needs.
  const HANG_MS = 5_000;
  const timed = (value: Record<string, unknown>) => {
    const started = performance.now();
    const result = check(value, true);
    return { result, ms: performance.now() - started };
  };

  it("refuses 100,000 invalid items at once, naming the list", () => {
    const { result, ms } = timed({ locales: Array(100_000).fill("a") });
    expect(result).toEqual([{ field: "locales", message: "must have at most 20 items", type: "maxItems" }]);
    expect(ms).toBeLessThan(HANG_MS);
  });

  it("refuses 100,000 keys at once, in a record or where a closed object would remove them one by one", () => {
    const keys = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, { bad: i }]));
    const { result, ms } = timed({ attributes: keys });
    expect(result).toEqual([
      { field: "attributes", message: `must have at most ${MAX_OBJECT_KEYS} keys`, type: "maxProperties" },
    ]);
    expect(ms).toBeLessThan(HANG_MS);
    expect(timed({ ...keys }).result).toEqual([
      { field: "", message: `must have at most ${MAX_OBJECT_KEYS} keys`, type: "maxProperties" },
    ]);
  });

  it("holds an internal action's objects to their declared limits only", () => {
    const internal = compileParamsChecker(
      Params({
        byContact: Type.Record(Type.String(), Type.Integer()),
        ids: Type.Array(Type.String(), { maxItems: 2 }),
      }),
      { internal: true },
    );
    const byContact = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`c${i}`, i]));
    expect(internal({ byContact, ids: ["a"] }, true)).toBe(true);
    expect(internal({ byContact, ids: ["a", "b", "c"] }, true)).toEqual([
      expect.objectContaining({ field: "ids", type: "maxItems" }),
    ]);
  });

  it("leaves the top level of an action that reads its raw body (a provider's list of events) uncounted", () => {
    const callback = compileParamsChecker(Params({ providerId: Type.String() }), { rawBody: true });
    const merged: Record<string, unknown> = { providerId: "p" };
    for (let i = 0; i < 2_000; i++) merged[i] = { event: "delivered" };
    expect(callback(merged, true)).toBe(true);
    expect(merged).toEqual({ providerId: "p" });
  });

  it("names a nested list by its path, and lets a union through when one branch's limit holds", () => {
    expect(check({ rows: [{ tags: ["a"] }, { tags: ["a", "b", "c"] }] }, true)).toEqual([
      expect.objectContaining({ field: "rows[1].tags", message: "must have at most 2 items" }),
    ]);
    expect(check({ either: [1, 2, 3] }, true)).toBe(true);
    expect(check({ either: [1, 2, 3, 4] }, true)).toEqual([
      expect.objectContaining({ field: "either", type: "maxItems" }),
    ]);
  });

  it(`answers at most ${MAX_ISSUES} issues however many items fail`, () => {
    const result = check({ locales: Array(20).fill("a"), attributes: { a: "long", b: "long" } }, true);
    expect(Array.isArray(result) && result.length).toBe(MAX_ISSUES);
  });

  it("refuses numbers that are not finite, as sent or read from a query string", () => {
    expect(check({ amount: Infinity }, true)).toEqual([
      { field: "amount", message: "must be a finite number", type: "finite" },
    ]);
    expect(check({ amount: "1e400" })).toEqual([expect.objectContaining({ field: "amount" })]);
    expect(check({ amount: "-1e400" })).toEqual([expect.objectContaining({ field: "amount" })]);
    expect(check({ amount: "NaN" })).toEqual([expect.objectContaining({ field: "amount" })]);
    expect(check({ amount: "1e300" })).toBe(true);
  });
});

describe("the validator middleware and declared statuses in a broker", () => {
  const broker = new ServiceBroker({
    logger: false,
    transporter: null,
    validator: false,
    middlewares: [validatorMiddleware(), DeclaredStatusMiddleware],
  });
  broker.createService({
    name: "sample",
    actions: {
      create: defineAction({
        params: Params({ name: Type.String({ minLength: 1 }) }),
        status: 201,
        result: Type.Object({ name: Type.String() }),
        handler: (ctx) => ({ name: ctx.params.name }),
      }),
    },
  });
  beforeAll(() => broker.start());
  afterAll(() => broker.stop());

  it("validates TypeBox params with Ajv and answers the declared status", async () => {
    const ctxMeta: Record<string, unknown> = {};
    await expect(broker.call("sample.create", { name: "x", extra: 1 }, { meta: ctxMeta })).resolves.toEqual({
      name: "x",
    });
    expect(ctxMeta.$statusCode).toBe(201);
    const err = await broker.call("sample.create", { name: "" }).catch((e: unknown) => e);
    const answer = toHttpError(err, false);
    expect(answer.status).toBe(400);
    expect(answer.body.details).toEqual([
      { field: "name", message: "must NOT have fewer than 1 characters" },
    ]);
  });

  it("refuses params that are not a TypeBox schema (fastest-validator rules are gone)", () => {
    const legacy = { name: "x.legacy", params: { $$strict: "remove", count: { type: "number" } } };
    expect(() => paramsChecker(legacy as never)).toThrow(/x.legacy: params must be a TypeBox schema/);
  });
});

describe("OpenAPI from TypeBox actions", () => {
  const Thing = Component("Thing", Type.Object({ id: Type.String(), parent: Nullable(Type.String()) }));
  const doc = buildOpenApi(
    [
      {
        name: "things",
        settings: { rest: "/" },
        actions: {
          "things.list": {
            name: "things.list",
            rest: "GET /workspaces/:workspaceId/things",
            auth: "any",
            permission: "contacts.read",
            params: Params({
              workspaceId: Type.String(),
              search: Type.Optional(Type.String()),
              ...PageQuery,
            }),
            result: Paginated(Thing),
          },
          "things.create": {
            name: "things.create",
            rest: "POST /workspaces/:workspaceId/things",
            auth: "any",
            params: Params({
              workspaceId: Type.String(),
              name: Type.String(),
              note: Type.Optional(Type.String()),
            }),
            status: 201,
            result: Thing,
          },
        },
      },
    ],
    "http://localhost",
  ) as any;
  const list = doc.paths["/api/workspaces/{workspaceId}/things"].get;
  const create = doc.paths["/api/workspaces/{workspaceId}/things"].post;

  it("splits params into path, query and body", () => {
    expect(list.parameters.map((p: any) => `${p.in}:${p.name}:${p.required}`)).toEqual([
      "path:workspaceId:true",
      "query:search:false",
      "query:page:false",
      "query:limit:false",
    ]);
    expect(create.requestBody.content["application/json"].schema).toEqual({
      type: "object",
      properties: { name: { type: "string" }, note: { type: "string" } },
      required: ["name"],
    });
  });

  it("declares the real success status and the result, with shared shapes as components", () => {
    expect(Object.keys(create.responses)).toEqual(["201", "4XX"]);
    expect(create.responses["201"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/Thing",
    });
    expect(list.responses["200"].content["application/json"].schema.properties.data.items).toEqual({
      $ref: "#/components/schemas/Thing",
    });
    expect(doc.components.schemas.Thing).toEqual({
      type: "object",
      properties: { id: { type: "string" }, parent: { type: ["string", "null"] } },
      required: ["id", "parent"],
    });
    expect(doc.components.schemas.Pagination.required).toEqual(["page", "limit", "total", "totalPages"]);
  });

  it("describes who may call each operation", () => {
    expect(list.description).toContain("`contacts.read`");
  });
});

describe("unstorableInput", () => {
  it("finds NUL and unpaired surrogates in strings and keys, with the path", () => {
    expect(unstorableInput({ a: { b: ["ok", "x\u0000"] } })).toMatchObject({ field: "a.b.1" });
    expect(unstorableInput({ a: "\ud800" })).toMatchObject({ field: "a" });
    expect(unstorableInput({ a: "\udc00x" })).toMatchObject({ field: "a" });
    expect(unstorableInput({ ["k\u0000"]: 1 })).toMatchObject({ field: "k\u0000" });
    expect(unstorableInput({ emoji: "😀", text: "plain", n: 1, none: null })).toBeNull();
  });

  it("refuses nesting past MAX_NESTING and does not look into non-plain values", () => {
    let deep: unknown = "x";
    for (let i = 0; i < MAX_NESTING + 1; i++) deep = [deep];
    expect(unstorableInput({ deep })?.message).toContain("nest");
    expect(unstorableInput({ when: new Date(), buffer: Buffer.from([0]) })).toBeNull();
  });
});
