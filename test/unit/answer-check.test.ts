import http from "node:http";
import type { AddressInfo } from "node:net";
import { HttpClient } from "../helpers/http";

/** The test suite's check of every answer against `GET /api/openapi` (test/helpers/answer-check.ts) fails on drift. */
describe("answers checked against their description", () => {
  const doc = {
    paths: {
      "/api/things/{id}": {
        get: {
          responses: {
            "200": { content: { "application/json": { schema: { $ref: "#/components/schemas/Thing" } } } },
            "4XX": {
              content: { "application/json": { schema: { type: "object", required: ["error", "code"] } } },
            },
          },
        },
        post: { responses: { "201": { content: { "application/json": { schema: {} } } } } },
      },
      "/api/things/{id}/moments": {
        get: {
          responses: {
            "200": {
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    properties: { at: { type: "string", format: "date-time" }, data: { type: "object" } },
                  },
                },
              },
            },
          },
        },
      },
      "/api/things/special": {
        get: { responses: { "202": { content: { "application/json": { schema: { type: "object" } } } } } },
      },
    },
    components: {
      schemas: { Thing: { type: "object", properties: { id: { type: "string" } }, required: ["id"] } },
    },
  };
  const answers: Record<string, [number, unknown]> = {
    "GET /api/things/good": [200, { id: "x" }],
    "GET /api/things/bad": [200, { id: 5 }],
    "GET /api/things/missing": [404, { message: "no" }],
    "POST /api/things/legacy": [200, { anything: true }],
    "GET /api/things/special": [200, {}],
    "GET /api/things/ms/moments": [200, { at: "2026-11-27T01:02:03.456Z", data: { t: "2026-11-27" } }],
    "GET /api/things/seconds/moments": [200, { at: "2026-11-27T01:02:03Z" }],
    "GET /api/things/offset/moments": [200, { at: "2026-11-27T01:02:03.456+00:00" }],
    "GET /api/things/nested/moments": [
      200,
      { at: "2026-11-27T01:02:03.456Z", data: { history: [{ at: "2026-11-27T01:02:03.456789+00:00" }] } },
    ],
    "GET /api/things/declined": [409, { error: "Taken", code: "CONFLICT" }],
  };
  let server: http.Server;
  let client: HttpClient;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const [status, body] = req.url === "/api/openapi" ? [200, doc] : answers[`${req.method} ${req.url}`];
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    client = new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("passes an answer that matches, through component references", async () => {
    await expect(client.get("/api/things/good")).resolves.toMatchObject({ status: 200 });
  });

  it("fails an answer whose body the description does not allow", async () => {
    await expect(client.get("/api/things/bad")).rejects.toThrow("id must be string");
    await expect(client.get("/api/things/missing")).rejects.toThrow("must have required property 'error'");
  });

  it("fails any operation answering a status it does not declare, itself or by its class", async () => {
    await expect(client.get("/api/things/special")).rejects.toThrow(
      "GET /api/things/special answered 200, a status its description does not declare",
    );
    await expect(client.post("/api/things/legacy", {})).rejects.toThrow(
      "POST /api/things/legacy answered 200, a status its description does not declare",
    );
    await expect(client.get("/api/things/declined")).resolves.toMatchObject({ status: 409 });
  });

  it("fails a moment not written as ISO 8601 UTC with milliseconds and Z, declared or inside untyped data", async () => {
    await expect(client.get("/api/things/ms/moments")).resolves.toMatchObject({ status: 200 });
    await expect(client.get("/api/things/seconds/moments")).rejects.toThrow("/at is not ISO 8601 UTC");
    await expect(client.get("/api/things/offset/moments")).rejects.toThrow("/at is not ISO 8601 UTC");
    await expect(client.get("/api/things/nested/moments")).rejects.toThrow(
      "/data/history/0/at is a moment with an offset",
    );
  });
});
