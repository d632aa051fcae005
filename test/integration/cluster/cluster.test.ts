import type { Context, Middleware } from "moleculer";
import { randomHex } from "../../../lib/crypto";
import { buildOpenApi } from "../../../lib/openapi";
import { startApp, type StartOptions, type TestApp } from "../../helpers/app";
import { dropStreams } from "../../helpers/nats";
import { ownerWithWorkspace, signUp, uniqueEmail } from "../../helpers/http";

/**
 * Two brokers: A runs only the gateway, B every other service (same
 * database, no gateway). Each request through A's HTTP port is served by an
 * action on B, across a real transporter hop: NATS when NATS_URL is set, and
 * always Moleculer's in-process Fake transporter, which still serialises
 * every packet and so catches what does not survive the hop (error types,
 * codes and details, `$statusCode` in meta, dates).
 */

const NATS_URL = process.env.NATS_URL;
if (!NATS_URL)
  console.log(
    "cluster.test.ts: the NATS suite is skipped: NATS_URL is not set (the Fake transporter suite still runs)",
  );

interface Handled {
  action: string;
  node: string;
  caller: string | null;
}

function clusterSuite(transport: "NATS" | "Fake") {
  let a: TestApp;
  let b: TestApp;
  const handled: Handled[] = [];
  const run = randomHex(4);
  const nodeA = `gateway-${run}`;
  const nodeB = `worker-${run}`;

  /** Records every action B runs, with the node that asked for it. */
  const recorder = {
    name: "Recorder",
    localAction(next: (ctx: Context) => Promise<unknown>, action: { name: string }) {
      return (ctx: Context) => {
        handled.push({ action: action.name, node: ctx.broker.nodeID, caller: ctx.nodeID ?? null });
        return next(ctx);
      };
    },
  } as unknown as Middleware;

  beforeAll(async () => {
    const env: StartOptions["env"] =
      transport === "NATS" ? { NATS_URL, NAMESPACE: `cluster-${run}` } : { NAMESPACE: `cluster-fake-${run}` };
    const transporter = transport === "NATS" ? NATS_URL : "Fake";
    b = await startApp({
      env,
      withoutGateway: true,
      broker: { nodeID: nodeB, transporter },
      middlewares: [recorder],
    });
    a = await startApp({
      env,
      services: ["api"],
      databaseUrl: b.databaseUrl,
      broker: { nodeID: nodeA, transporter },
      waitForServices: ["workspaces", "auth", "contacts"],
    });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    if (transport === "NATS") await dropStreams(NATS_URL!, `cluster-${run}`);
  });

  const handledBy = (action: string) => handled.filter((h) => h.action === action);

  test("A runs only the gateway; B runs the rest and A sees it there", () => {
    expect(a.baseUrl).not.toBe("");
    expect(b.baseUrl).toBe("");
    expect(a.broker.getLocalService("workspaces")).toBeFalsy();
    expect(a.broker.getLocalService("contacts")).toBeFalsy();
    expect(b.broker.getLocalService("api")).toBeFalsy();
    const services = a.broker.registry.getServiceList({
      onlyAvailable: true,
      skipInternal: true,
    }) as unknown as Array<{
      name: string;
      nodeID: string;
    }>;
    expect(services.filter((s) => s.name === "workspaces").map((s) => s.nodeID)).toEqual([nodeB]);
  });

  test("a request through A is served by an action on B", async () => {
    handled.length = 0;
    const { owner, workspaceId, ws } = await ownerWithWorkspace(a.baseUrl);
    const res = await owner.client.get(ws);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: workspaceId, name: "Acme", role: "OWNER" });
    expect(new Date(res.body.createdAt).getTime()).toBeGreaterThan(0);
    expect(handledBy("workspaces.get")).toEqual([{ action: "workspaces.get", node: nodeB, caller: nodeA }]);
    expect(handledBy("workspaces.create")).toEqual([
      { action: "workspaces.create", node: nodeB, caller: nodeA },
    ]);
  });

  test("statuses, error types, codes and details survive the hop", async () => {
    const { owner, ws } = await ownerWithWorkspace(a.baseUrl);
    const c = owner.client;

    const created = await c.post(`${ws}/contacts`, { email: uniqueEmail(), firstName: "Hop" });
    expect(created.status).toBe(201);
    expect(created.body.firstName).toBe("Hop");

    const missing = await c.get(`${ws}/contacts/${randomHex(8)}`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: expect.any(String), code: "NOT_FOUND" });

    const invalid = await c.post(`${ws}/members`, { email: "not-an-email", role: "MEMBER" });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({
      code: "VALIDATION_ERROR",
      details: [expect.objectContaining({ field: "email" })],
    });
    expect(Object.keys(invalid.body).sort()).toEqual(["code", "details", "error"]);

    const dup = await c.post(`${ws}/contacts`, { email: created.body.email });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe("CONFLICT");

    const lastOwner = await c.patch(`${ws}/members/${(await c.get(`${ws}/members`)).body[0].id}`, {
      role: "VIEWER",
    });
    expect(lastOwner.status).toBe(400);
    expect(lastOwner.body.code).toBe("VALIDATION_ERROR");

    const stranger = await signUp(a.baseUrl);
    const forbidden = await stranger.client.get(ws);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ error: expect.any(String), code: "FORBIDDEN" });

    // A key checked on A (auth.verifyApiKey on B), then refused on B once revoked.
    const key = await c.post(`${ws}/keys`, { name: "hop", scopes: ["contacts.read"] });
    expect(key.status).toBe(201);
    expect((await a.http().get(`${ws}/contacts`, { bearer: key.body.key })).status).toBe(200);
    expect(
      (await a.http().post(`${ws}/contacts`, { email: uniqueEmail() }, { bearer: key.body.key })).status,
    ).toBe(403);
    expect((await c.delete(`${ws}/keys/${key.body.id}`)).status).toBe(200);
    const revoked = await a.http().get(`${ws}/contacts`, { bearer: key.body.key });
    expect(revoked.status).toBe(401);
    expect(revoked.body).toEqual({ error: expect.any(String), code: "UNAUTHORIZED" });
  });

  test("the API description A serves for B's actions is whole: no schema lost on the hop", async () => {
    const served = (await a.http().get("/api/openapi")).body;
    const local = buildOpenApi(
      b.broker.registry.getServiceList({ withActions: true }),
      served.servers[0].url,
    ) as {
      paths: Record<string, unknown>;
      components: unknown;
    };
    // B has no gateway, so its own document lacks the gateway's routes; every other path must be identical.
    const paths = Object.keys(local.paths);
    expect(paths.length).toBeGreaterThan(60);
    for (const path of paths)
      expect({ path, operations: served.paths[path] }).toEqual({ path, operations: local.paths[path] });
    expect(served.components.schemas).toEqual(
      expect.objectContaining((local.components as { schemas: object }).schemas),
    );
  });

  test("the caller's ip set on A reaches the audit log written on B", async () => {
    const { owner, ws } = await ownerWithWorkspace(a.baseUrl);
    await owner.client.request("PATCH", ws, {
      body: { name: "Hopped" },
      headers: { "x-forwarded-for": "192.0.2.44" },
    });
    const log = await owner.client.get(`${ws}/audit-logs?action=workspace.updated`);
    expect(log.body.data).toEqual([expect.objectContaining({ actorId: owner.id, ip: "192.0.2.44" })]);
  });
}

(NATS_URL ? describe : describe.skip)("cluster over NATS", () => clusterSuite("NATS"));
describe("cluster over the Fake transporter", () => clusterSuite("Fake"));
