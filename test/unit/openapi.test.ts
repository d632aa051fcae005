import { Type } from "@sinclair/typebox";
import { buildOpenApi } from "../../lib/openapi";
import { Params } from "../../lib/schema";

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
          params: Params({
            workspaceId: Type.String(),
            page: Type.Optional(Type.Number()),
            q: Type.String(),
          }),
        },
        "things.create": {
          name: "things.create",
          rest: "POST /workspaces/:workspaceId/things",
          auth: "session",
          role: "ADMIN",
          params: Params({ workspaceId: Type.String(), name: Type.String({ maxLength: 10 }) }),
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

  test("POST: JSON request body without path params; session only; role", () => {
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

test("an action's `failures` add error answers past 4xx beside its typed success", () => {
  const doc = buildOpenApi(
    [
      {
        name: "remote",
        settings: { rest: "/" },
        actions: {
          "remote.pull": {
            name: "remote.pull",
            rest: "POST /pull",
            auth: "any",
            result: Type.Object({ n: Type.Integer() }),
            openapi: { failures: [502] },
          },
        },
      },
    ],
    "https://app.example.test",
  ) as any;
  const op = doc.paths["/api/pull"].post;
  expect(Object.keys(op.responses).sort()).toEqual(["200", "4XX", "502"]);
  expect(op.responses["502"]).toEqual({ $ref: "#/components/responses/Error" });
  expect(op.failures).toBeUndefined();
});
