import { buildOpenApi, isOptional, objectSchema, ruleToSchema } from "../../lib/openapi";

describe("ruleToSchema: fastest-validator types", () => {
  test.each<[string, unknown, Record<string, unknown>]>([
    ["string", { type: "string", min: 1, max: 100 }, { type: "string", minLength: 1, maxLength: 100 }],
    ["string length", { type: "string", length: 64 }, { type: "string", minLength: 64, maxLength: 64 }],
    ["string empty:false", { type: "string", empty: false }, { type: "string", minLength: 1 }],
    ["string enum", { type: "string", enum: ["a", "b"] }, { type: "string", enum: ["a", "b"] }],
    [
      "string pattern (RegExp)",
      { type: "string", pattern: /^[a-z]+$/ },
      { type: "string", pattern: "^[a-z]+$" },
    ],
    ["string pattern (text)", { type: "string", pattern: "^x" }, { type: "string", pattern: "^x" }],
    ["number", { type: "number", min: 0, max: 10 }, { type: "number", minimum: 0, maximum: 10 }],
    [
      "integer positive",
      { type: "number", integer: true, positive: true },
      { type: "integer", exclusiveMinimum: 0 },
    ],
    ["number negative", { type: "number", negative: true }, { type: "number", exclusiveMaximum: 0 }],
    ["number equal", { type: "number", equal: 5 }, { type: "number", const: 5 }],
    ["boolean", { type: "boolean", convert: true }, { type: "boolean" }],
    ["email", { type: "email", max: 254 }, { type: "string", format: "email", maxLength: 254 }],
    ["url", { type: "url" }, { type: "string", format: "uri" }],
    ["uuid", { type: "uuid" }, { type: "string", format: "uuid" }],
    ["date", { type: "date", convert: true }, { type: "string", format: "date-time" }],
    ["any", { type: "any" }, {}],
    ["enum", { type: "enum", values: ["OWNER", "ADMIN"] }, { enum: ["OWNER", "ADMIN"] }],
    ["equal", { type: "equal", value: "yes" }, { const: "yes" }],
    [
      "array",
      { type: "array", items: "string", min: 1, max: 5 },
      { type: "array", items: { type: "string" }, minItems: 1, maxItems: 5 },
    ],
    [
      "array enum unique",
      { type: "array", enum: ["a"], unique: true },
      { type: "array", items: { enum: ["a"] }, uniqueItems: true },
    ],
    ["array length", { type: "array", length: 2 }, { type: "array", minItems: 2, maxItems: 2 }],
    ["array empty:false", { type: "array", empty: false }, { type: "array", minItems: 1 }],
    [
      "tuple",
      { type: "tuple", items: ["number", "string"] },
      { type: "array", prefixItems: [{ type: "number" }, { type: "string" }], minItems: 2, maxItems: 2 },
    ],
    [
      "record",
      { type: "record", key: { type: "string", max: 40 }, value: "number" },
      {
        type: "object",
        propertyNames: { type: "string", maxLength: 40 },
        additionalProperties: { type: "number" },
      },
    ],
    ["object without props", { type: "object" }, { type: "object" }],
    [
      "object with props",
      { type: "object", props: { a: "string", b: { type: "number", optional: true } } },
      { type: "object", properties: { a: { type: "string" }, b: { type: "number" } }, required: ["a"] },
    ],
    [
      "object with properties, strict",
      { type: "object", strict: true, properties: { a: { type: "string", optional: true } } },
      { type: "object", properties: { a: { type: "string" } }, additionalProperties: false },
    ],
    [
      "multi",
      { type: "multi", rules: ["string", "number"] },
      { anyOf: [{ type: "string" }, { type: "number" }] },
    ],
    ["array of rules", ["string", { type: "boolean" }], { anyOf: [{ type: "string" }, { type: "boolean" }] }],
    ["currency", { type: "currency" }, { type: "string" }],
    ["luhn", { type: "luhn" }, { type: "string" }],
    ["mac", { type: "mac" }, { type: "string" }],
    ["objectID", { type: "objectID" }, { type: "string" }],
    ["class", { type: "class", instanceOf: Buffer }, {}],
    ["function", { type: "function" }, {}],
    ["custom", { type: "custom", check: () => true }, {}],
    ["nullable", { type: "string", nullable: true }, { anyOf: [{ type: "string" }, { type: "null" }] }],
    ["default", { type: "number", default: 5 }, { type: "number", default: 5 }],
    [
      "default function dropped",
      { type: "date", default: () => new Date() },
      { type: "string", format: "date-time" },
    ],
    ["description", { type: "string", description: "Shown" }, { type: "string", description: "Shown" }],
  ])("%s", (_name, rule, expected) => {
    expect(ruleToSchema(rule as never)).toEqual(expected);
  });
});

describe("ruleToSchema: shorthand strings", () => {
  test.each<[string, Record<string, unknown>]>([
    ["string", { type: "string" }],
    ["string|min:3|max:100", { type: "string", minLength: 3, maxLength: 100 }],
    ["string | optional | max:20", { type: "string", maxLength: 20 }],
    ["number|integer:true|positive", { type: "integer", exclusiveMinimum: 0 }],
    ["number|integer:false", { type: "number" }],
    ["boolean", { type: "boolean" }],
    ["email|max:254", { type: "string", format: "email", maxLength: 254 }],
    ["string[]", { type: "array", items: { type: "string" } }],
    ["number[]|max:3", { type: "array", items: { type: "number" }, maxItems: 3 }],
    ["string|nullable", { anyOf: [{ type: "string" }, { type: "null" }] }],
    ["string|pattern:^a:b$", { type: "string", pattern: "^a:b$" }],
  ])("%s", (rule, expected) => {
    expect(ruleToSchema(rule)).toEqual(expected);
  });

  test("optional, no-optional, default and forbidden", () => {
    expect(isOptional("string|optional")).toBe(true);
    expect(isOptional("string|optional:true")).toBe(true);
    expect(isOptional("string|no-optional")).toBe(false);
    expect(isOptional("string")).toBe(false);
    expect(isOptional({ type: "string", default: "x" })).toBe(true);
    expect(isOptional({ type: "forbidden" })).toBe(true);
    expect(isOptional(["string|optional", { type: "number", optional: true }])).toBe(true);
    expect(isOptional(["string|optional", "number"])).toBe(false);
  });

  test("objectSchema leaves out $$ keys and forbidden fields, lists required ones", () => {
    expect(
      objectSchema({
        $$strict: "remove" as never,
        name: "string|max:10",
        nick: "string|optional",
        id: { type: "forbidden" },
        role: "forbidden",
      }),
    ).toEqual({
      type: "object",
      properties: { name: { type: "string", maxLength: 10 }, nick: { type: "string" } },
      required: ["name"],
    });
    expect(objectSchema({ a: "string|optional" })).toEqual({
      type: "object",
      properties: { a: { type: "string" } },
    });
  });
});

describe("buildOpenApi", () => {
  const services = [
    {
      name: "things",
      settings: { rest: "/" },
      actions: {
        "things.list": {
          name: "things.list",
          rest: "GET /workspaces/:workspaceId/things",
          auth: "any",
          permission: "contacts.read",
          params: {
            $$strict: "remove",
            workspaceId: "string",
            page: { type: "number", optional: true, convert: true },
            q: "string",
          },
        },
        "things.create": {
          name: "things.create",
          rest: "POST /workspaces/:workspaceId/things",
          auth: "session",
          role: "ADMIN",
          params: { workspaceId: "string", name: { type: "string", max: 10 }, id: "forbidden" },
          openapi: { tags: ["Things"], summary: "Create" },
        },
        "things.catchAll": { name: "things.catchAll", rest: ["/x/:a", "/x/:a/:b"], auth: "public" },
        "things.tick": { name: "things.tick", rest: "GET /tick", auth: "cron" },
        "things.internal": { name: "things.internal" },
      },
    },
    { name: "things", settings: { rest: "/" }, actions: {} }, // a second instance of the same service is ignored
    {
      name: "legacy",
      actions: { "legacy.get": { name: "legacy.get", rest: { method: "GET", path: "/:id" }, auth: "any" } },
    },
  ];
  const doc = buildOpenApi(services, "https://app.example.test") as any;

  test("header, servers and security schemes", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info).toEqual({ title: expect.any(String), version: expect.any(String) });
    expect(doc.servers).toEqual([{ url: "https://app.example.test" }]);
    expect(doc.components.securitySchemes).toEqual({
      sessionCookie: { type: "apiKey", in: "cookie", name: "__Secure-next-auth.session-token" },
      bearerApiKey: expect.objectContaining({ type: "http", scheme: "bearer" }),
      cronSecret: expect.objectContaining({ type: "http", scheme: "bearer" }),
    });
    const plain = buildOpenApi([], "http://localhost:3000") as any;
    expect(plain.components.securitySchemes.sessionCookie.name).toBe("next-auth.session-token");
  });

  test("paths: /api prefix, {param} syntax, service rest base, no internal actions", () => {
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        "/api/legacy/{id}",
        "/api/tick",
        "/api/workspaces/{workspaceId}/things",
        "/api/x/{a}",
        "/api/x/{a}/{b}",
      ].sort(),
    );
    expect(Object.keys(doc.paths["/api/workspaces/{workspaceId}/things"]).sort()).toEqual(["get", "post"]);
  });

  test("GET: path and query parameters with required flags", () => {
    const op = doc.paths["/api/workspaces/{workspaceId}/things"].get;
    expect(op.parameters).toEqual([
      { name: "workspaceId", in: "path", required: true, schema: { type: "string" } },
      { name: "page", in: "query", required: false, schema: { type: "number" } },
      { name: "q", in: "query", required: true, schema: { type: "string" } },
    ]);
    expect(op.security).toEqual([{ sessionCookie: [] }, { bearerApiKey: [] }]);
    expect(op["x-permission"]).toBe("contacts.read");
    expect(op.responses["200"]).toBeDefined();
    expect(op.responses["4XX"]).toEqual({ $ref: "#/components/responses/Error" });
    expect(op.requestBody).toBeUndefined();
  });

  test("POST: JSON request body without path params or forbidden fields; session only; role", () => {
    const op = doc.paths["/api/workspaces/{workspaceId}/things"].post;
    expect(op.requestBody.content["application/json"].schema).toEqual({
      type: "object",
      properties: { name: { type: "string", maxLength: 10 } },
      required: ["name"],
    });
    expect(op.security).toEqual([{ sessionCookie: [] }]);
    expect(op["x-role"]).toBe("ADMIN");
    expect(op.tags).toEqual(["Things"]);
    expect(op.summary).toBe("Create");
    expect(op.responses["201"]).toBeDefined();
  });

  test("public and cron security; a method-less route is GET and POST", () => {
    expect(doc.paths["/api/x/{a}"].get.security).toEqual([]);
    expect(Object.keys(doc.paths["/api/x/{a}"]).sort()).toEqual(["get", "post"]);
    expect(doc.paths["/api/tick"].get.security).toEqual([{ cronSecret: [] }]);
  });

  test("operationIds are unique", () => {
    const ids = Object.values(doc.paths).flatMap((ops: any) =>
      Object.values(ops).map((op: any) => op.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain("things.catchAll.get");
    expect(ids).toContain("things.catchAll.get.2");
  });
});
