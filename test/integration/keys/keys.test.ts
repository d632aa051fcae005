import { Client } from "pg";
import { waitFor } from "../../helpers/wait";
import { sha256Hex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp } from "../../helpers/http";

let app: TestApp;
let db: Client;
beforeAll(async () => {
  app = await startApp();
  db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db.end();
  await app.stop();
});

describe("API keys", () => {
  test("create returns the full key once; the DB holds only its SHA-256; lists mask it", async () => {
    const { owner, workspaceId, ws } = await ownerWithWorkspace(app.baseUrl);
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const created = await owner.client.post(`${ws}/keys`, {
      name: "CI",
      scopes: ["contacts.read", "contacts.read"],
      expiresAt,
    });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual(["expiresAt", "id", "key", "name", "scopes"]);
    expect(created.body).toMatchObject({ name: "CI", scopes: ["contacts.read"], expiresAt });
    const key = created.body.key as string;
    expect(key).toMatch(/^svc_[0-9A-Za-z]{40}$/);

    const rows = await db.query("SELECT * FROM api_keys WHERE workspace_id = $1", [workspaceId]);
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0].key_hash).toBe(sha256Hex(key));
    const secret = key.slice(4);
    for (const value of Object.values(rows.rows[0])) {
      const text = value instanceof Date ? value.toISOString() : JSON.stringify(value);
      expect(text ?? "").not.toContain(secret);
    }

    const list = await owner.client.get(`${ws}/keys`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      {
        id: created.body.id,
        name: "CI",
        key: `svc_****${key.slice(-4)}`,
        scopes: ["contacts.read"],
        expiresAt,
        lastUsedAt: null,
        createdAt: expect.any(String),
      },
    ]);
    expect(list.text).not.toContain(secret);
  });

  test('scopes are validated; [] and ["*"] grant every permission', async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const bad = await owner.client.post(`${ws}/keys`, {
      name: "x",
      scopes: ["contacts.read", "contacts.fly"],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("VALIDATION_ERROR");
    expect(bad.body.details).toEqual([expect.objectContaining({ field: expect.stringMatching(/^scopes/) })]);
    expect((await owner.client.post(`${ws}/keys`, { name: "x", scopes: "contacts.read" })).status).toBe(400);
    expect((await owner.client.post(`${ws}/keys`, { scopes: [] })).body.details[0].field).toBe("name");
    expect((await owner.client.post(`${ws}/keys`, { name: "x".repeat(101) })).status).toBe(400);

    for (const scopes of [[], ["*"], undefined]) {
      const created = await owner.client.post(`${ws}/keys`, { name: "all", scopes });
      expect(created.status).toBe(201);
      const client = app.http();
      client.bearer = created.body.key;
      // settings.manage is held by no role below ADMIN; an all-scopes key has it.
      expect((await client.patch(ws, { name: "Changed by key" })).status).toBe(200);
      expect((await client.get(ws)).status).toBe(200);
    }
    const narrow = await owner.client.post(`${ws}/keys`, { name: "narrow", scopes: ["contacts.read"] });
    const client = app.http();
    client.bearer = narrow.body.key;
    expect((await client.get(ws)).status).toBe(200);
    const denied = await client.patch(ws, { name: "Nope" });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("FORBIDDEN");
  });

  test("expiresAt in the past or not a date is 400", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const past = await owner.client.post(`${ws}/keys`, {
      name: "old",
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    expect(past.status).toBe(400);
    expect(past.body.details[0].field).toBe("expiresAt");
    const garbage = await owner.client.post(`${ws}/keys`, { name: "old", expiresAt: "tomorrow-ish" });
    expect(garbage.status).toBe(400);
    expect(garbage.body.details[0].field).toBe("expiresAt");
  });

  test("an expired key is 401, whether expiry comes from the DB or passes while the key is cached", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const created = await owner.client.post(`${ws}/keys`, { name: "soon" });
    await db.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [
      created.body.id,
    ]);
    const res = await app.http().get(ws, { bearer: created.body.key });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("UNAUTHORIZED");

    const shortLived = await owner.client.post(`${ws}/keys`, {
      name: "short",
      expiresAt: new Date(Date.now() + 1500).toISOString(),
    });
    expect((await app.http().get(ws, { bearer: shortLived.body.key })).status).toBe(200);
    await waitFor(
      async () => (await app.http().get(ws, { bearer: shortLived.body.key })).status === 401,
      5000,
      "the short-lived key to expire",
    );
  });

  test("a revoked key is 401 at once, and leaves the list", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const created = await owner.client.post(`${ws}/keys`, { name: "gone" });
    const client = app.http();
    client.bearer = created.body.key;
    // Used (and so cached) before the revoke.
    expect((await client.get(ws)).status).toBe(200);
    expect((await client.get(ws)).status).toBe(200);
    const revoked = await owner.client.delete(`${ws}/keys/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ success: true });
    const after = await client.get(ws);
    expect(after.status).toBe(401);
    expect(after.body).toEqual({ error: expect.any(String), code: "UNAUTHORIZED" });
    expect((await owner.client.get(`${ws}/keys`)).body).toEqual([]);
    expect((await owner.client.delete(`${ws}/keys/${created.body.id}`)).status).toBe(404);
    expect((await owner.client.delete(`${ws}/keys/unknown`)).status).toBe(404);
  });

  test("lastUsedAt is set on use and written at most once a minute", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const created = await owner.client.post(`${ws}/keys`, { name: "used" });
    const lastUsed = async () =>
      (await db.query("SELECT last_used_at FROM api_keys WHERE id = $1", [created.body.id])).rows[0]
        .last_used_at as Date | null;
    expect(await lastUsed()).toBeNull();
    expect((await app.http().get(ws, { bearer: created.body.key })).status).toBe(200);
    await waitFor(async () => (await lastUsed()) !== null, 5000, "lastUsedAt to be written");
    const first = (await lastUsed())!.getTime();
    const list = await owner.client.get(`${ws}/keys`);
    expect(Date.parse(list.body[0].lastUsedAt)).toBe(first);

    for (let i = 0; i < 3; i += 1)
      expect((await app.http().get(ws, { bearer: created.body.key })).status).toBe(200);
    // A write would have been issued before the responses above; give it a round trip through the DB to land.
    await db.query("SELECT pg_sleep(0.05)");
    expect((await lastUsed())!.getTime()).toBe(first);
  });

  test("a key never reaches another workspace", async () => {
    const a = await ownerWithWorkspace(app.baseUrl);
    const b = await ownerWithWorkspace(app.baseUrl);
    const created = await a.owner.client.post(`${a.ws}/keys`, { name: "a-only" });
    const client = app.http();
    client.bearer = created.body.key;
    expect((await client.get(a.ws)).status).toBe(200);
    for (const res of [await client.get(b.ws), await client.patch(b.ws, { name: "pwned" })]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe("FORBIDDEN");
    }
    expect((await b.owner.client.get(b.ws)).body.name).toBe("Acme");
    // Nor can one workspace's admin revoke another's key.
    expect((await b.owner.client.delete(`${b.ws}/keys/${created.body.id}`)).status).toBe(404);
    expect((await client.get(a.ws)).status).toBe(200);
  });

  test("key management needs a session with the ADMIN role", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const all = await owner.client.post(`${ws}/keys`, { name: "all", scopes: ["*"] });
    const keyClient = app.http();
    keyClient.bearer = all.body.key;
    for (const res of [
      await keyClient.get(`${ws}/keys`),
      await keyClient.post(`${ws}/keys`, { name: "more" }),
      await keyClient.delete(`${ws}/keys/${all.body.id}`),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("UNAUTHORIZED");
    }
    const admin = await signUp(app.baseUrl);
    await owner.client.post(`${ws}/members`, { email: admin.email, role: "ADMIN" });
    expect((await admin.client.get(`${ws}/keys`)).status).toBe(200);
    const made = await admin.client.post(`${ws}/keys`, { name: "admin's" });
    expect(made.status).toBe(201);
    for (const role of ["MEMBER", "VIEWER"]) {
      const user = await signUp(app.baseUrl);
      await owner.client.post(`${ws}/members`, { email: user.email, role });
      expect((await user.client.get(`${ws}/keys`)).status).toBe(403);
      expect((await user.client.post(`${ws}/keys`, { name: "x" })).status).toBe(403);
      expect((await user.client.delete(`${ws}/keys/${made.body.id}`)).status).toBe(403);
    }
    expect((await admin.client.delete(`${ws}/keys/${made.body.id}`)).status).toBe(200);
  });

  test("a malformed or unknown bearer is 401; query-string keys are not accepted", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const created = await owner.client.post(`${ws}/keys`, { name: "q" });
    expect((await app.http().get(ws, { bearer: `svc_${"a".repeat(40)}` })).status).toBe(401);
    expect((await app.http().get(ws, { headers: { authorization: created.body.key } })).status).toBe(401);
    expect((await app.http().get(`${ws}?apiKey=${created.body.key}`)).status).toBe(401);
    expect((await app.http().get(`${ws}?access_token=${created.body.key}`)).status).toBe(401);
  });
});
