import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";

/**
 * The gateway on node A, the contacts service on node B, over Moleculer's
 * Fake transporter (every packet serialised): the import's request stream and
 * path params, and the export's response stream, must survive the hop.
 */
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  const run = randomHex(4);
  const env = { NAMESPACE: `contacts-hop-${run}` };
  b = await startApp({
    env,
    services: ["auth", "workspaces", "contacts", "jobs"],
    withoutGateway: true,
    broker: { nodeID: `contacts-${run}`, transporter: "Fake" },
  });
  a = await startApp({
    env,
    services: ["api"],
    databaseUrl: b.databaseUrl,
    broker: { nodeID: `gateway-${run}`, transporter: "Fake" },
    waitForServices: ["auth", "workspaces", "contacts", "jobs"],
  });
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
});

test("import (streamed request) and export (streamed response) work when the contacts service is on another node", async () => {
  const { owner, ws } = await ownerWithWorkspace(a.baseUrl);
  const c = owner.client;
  const csv = "email,firstName,attributes.plan\nhop1@x.io,One,pro\nhop2@x.io,Two,free\nbad,Three,\n";
  const res = await c.request("POST", `${ws}/contacts/import`, {
    raw: csv,
    headers: { "content-type": "text/csv" },
  });
  expect(res.status).toBe(202);
  const job = await finishedJob(c, ws, res.body.jobId);
  expect(job.result).toMatchObject({ created: 2, updated: 0, failed: [{ line: 4 }] });

  const exported = await c.get(`${ws}/contacts/export?attributes[plan]=pro`);
  expect(exported.status).toBe(200);
  expect(exported.headers.get("content-type")).toContain("text/csv");
  const lines = exported.text.trim().split("\n");
  expect(lines).toHaveLength(2);
  expect(lines[1]).toContain("hop1@x.io");

  const other = await ownerWithWorkspace(a.baseUrl);
  const denied = await other.owner.client.request("POST", `${ws}/contacts/import`, {
    raw: csv,
    headers: { "content-type": "text/csv" },
  });
  expect(denied.status).toBe(403);
});
