import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { multipartBody, ownerWithWorkspace } from "../../helpers/http";

/**
 * The gateway on node A, the content service on node B, over Moleculer's
 * Fake transporter (every packet serialised): an upload's request stream, a
 * JSON body read from the route's params, and a download's response stream
 * with its headers must survive the hop.
 */
let a: TestApp;
let b: TestApp;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "assets-hop-"));

beforeAll(async () => {
  const run = randomHex(4);
  const env = { NAMESPACE: `assets-hop-${run}`, DATA_DIR: dataDir };
  b = await startApp({
    env,
    services: ["auth", "workspaces", "content"],
    withoutGateway: true,
    broker: { nodeID: `content-${run}`, transporter: "Fake" },
  });
  a = await startApp({
    env,
    services: ["api"],
    databaseUrl: b.databaseUrl,
    broker: { nodeID: `gateway-${run}`, transporter: "Fake" },
    waitForServices: ["auth", "workspaces", "content"],
  });
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test("uploads (multipart and JSON) and downloads work when the content service is on another node", async () => {
  const { owner, ws } = await ownerWithWorkspace(a.baseUrl);
  const bytes = Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(512 * 1024, 65)]);
  const form = new FormData();
  form.append("name", "Brochure");
  form.append("file", new Blob([bytes]), "brochure.pdf");
  const uploaded = await owner.client.request("POST", `${ws}/assets`, await multipartBody(form));
  expect(uploaded.status).toBe(201);
  expect(uploaded.body).toMatchObject({
    name: "Brochure",
    contentType: "application/pdf",
    size: bytes.length,
  });

  const res = await fetch(`${a.baseUrl}/api/assets/${uploaded.body.id}/download`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="brochure.pdf"/);
  expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);

  const remote = await owner.client.post(`${ws}/assets`, {
    name: "Site",
    remoteUrl: "https://example.com/x",
  });
  expect(remote.status).toBe(201);
  expect(remote.body.remoteUrl).toBe("https://example.com/x");
  const bad = await owner.client.post(`${ws}/assets`, { name: "Site", remoteUrl: "ftp://example.com/x" });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("remoteUrl");
});
