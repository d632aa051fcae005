import { Client } from "pg";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp, uniqueEmail } from "../../helpers/http";

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

const INJECTIONS = [
  "' OR '1'='1",
  "1; DROP TABLE members; --",
  "x' UNION SELECT id, email FROM users --",
  '"); DELETE FROM workspaces; --',
];

describe("mass assignment has no effect", () => {
  test("workspace create ignores id, role and workspaceId", async () => {
    const user = await signUp(app.baseUrl);
    const victim = await ownerWithWorkspace(app.baseUrl);
    const res = await user.client.post("/api/workspaces", {
      name: "Mine",
      id: victim.workspaceId,
      workspaceId: victim.workspaceId,
      role: "VIEWER",
    });
    expect(res.status).toBe(201);
    expect(res.body.id).not.toBe(victim.workspaceId);
    expect(res.body.role).toBe("OWNER");
    // The user did not become a member of the victim's workspace.
    expect((await user.client.get(victim.ws)).status).toBe(403);
    expect((await victim.owner.client.get(victim.ws)).body.name).toBe("Acme");
  });

  test("workspace PATCH with another workspaceId or id changes only the path's workspace", async () => {
    const a = await ownerWithWorkspace(app.baseUrl);
    const b = await ownerWithWorkspace(app.baseUrl);
    const res = await a.owner.client.patch(a.ws, {
      name: "Renamed",
      workspaceId: b.workspaceId,
      id: b.workspaceId,
      role: "VIEWER",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: a.workspaceId, name: "Renamed", role: "OWNER" });
    expect((await b.owner.client.get(b.ws)).body.name).toBe("Acme");
    // The caller's own role did not change either.
    expect((await a.owner.client.get(a.ws)).body.role).toBe("OWNER");
  });

  test("member add and change ignore workspaceId, userId and id in the body", async () => {
    const a = await ownerWithWorkspace(app.baseUrl);
    const b = await ownerWithWorkspace(app.baseUrl);
    const user = await signUp(app.baseUrl);
    const added = await a.owner.client.post(`${a.ws}/members`, {
      email: user.email,
      role: "VIEWER",
      workspaceId: b.workspaceId,
      id: "chosen-id",
      userId: b.owner.id,
    });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ userId: user.id, role: "VIEWER" });
    expect(added.body.id).not.toBe("chosen-id");
    expect((await user.client.get(a.ws)).body.role).toBe("VIEWER");
    expect((await user.client.get(b.ws)).status).toBe(403);

    const changed = await a.owner.client.patch(`${a.ws}/members/${added.body.id}`, {
      role: "MEMBER",
      userId: b.owner.id,
      workspaceId: b.workspaceId,
      memberId: "other",
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id: added.body.id, userId: user.id, role: "MEMBER" });
    const rows = await db.query("SELECT workspace_id, user_id, role FROM members WHERE id = $1", [
      added.body.id,
    ]);
    expect(rows.rows).toEqual([{ workspace_id: a.workspaceId, user_id: user.id, role: "MEMBER" }]);
  });

  test("key create ignores workspaceId, id, key and lastUsedAt in the body", async () => {
    const a = await ownerWithWorkspace(app.baseUrl);
    const b = await ownerWithWorkspace(app.baseUrl);
    const chosenKey = `svc_${"A".repeat(40)}`;
    const res = await a.owner.client.post(`${a.ws}/keys`, {
      name: "k",
      workspaceId: b.workspaceId,
      id: "chosen",
      key: chosenKey,
      keyHash: "0".repeat(64),
      revokedAt: null,
      lastUsedAt: new Date().toISOString(),
    });
    expect(res.status).toBe(201);
    expect(res.body.id).not.toBe("chosen");
    expect(res.body.key).not.toBe(chosenKey);
    const rows = await db.query("SELECT workspace_id, key_hash, last_used_at FROM api_keys WHERE id = $1", [
      res.body.id,
    ]);
    expect(rows.rows[0].workspace_id).toBe(a.workspaceId);
    expect(rows.rows[0].key_hash).not.toBe("0".repeat(64));
    expect(rows.rows[0].last_used_at).toBeNull();
    expect((await app.http().get(b.ws, { bearer: res.body.key })).status).toBe(403);
    expect((await app.http().get(a.ws, { bearer: chosenKey })).status).toBe(401);
  });

  test("contact create and update ignore workspaceId and id", async () => {
    const a = await ownerWithWorkspace(app.baseUrl);
    const b = await ownerWithWorkspace(app.baseUrl);
    const created = await a.owner.client.post(`${a.ws}/contacts`, {
      email: uniqueEmail(),
      workspaceId: b.workspaceId,
      id: "chosen",
    });
    expect(created.status).toBe(201);
    expect(created.body.id).not.toBe("chosen");
    const rows = await db.query("SELECT workspace_id FROM contacts WHERE id = $1", [created.body.id]);
    expect(rows.rows).toEqual([{ workspace_id: a.workspaceId }]);
    expect((await b.owner.client.get(`${b.ws}/contacts`)).body.pagination.total).toBe(0);

    const patched = await a.owner.client.patch(`${a.ws}/contacts/${created.body.id}`, {
      firstName: "Ann",
      workspaceId: b.workspaceId,
      id: "other",
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: created.body.id, firstName: "Ann" });
    const after = await db.query("SELECT id, workspace_id FROM contacts WHERE workspace_id = $1", [
      a.workspaceId,
    ]);
    expect(after.rows).toEqual([{ id: created.body.id, workspace_id: a.workspaceId }]);
    // A contact of workspace A is not reachable through workspace B.
    expect((await b.owner.client.get(`${b.ws}/contacts/${created.body.id}`)).status).toBe(404);
    expect(
      (await b.owner.client.patch(`${b.ws}/contacts/${created.body.id}`, { firstName: "X" })).status,
    ).toBe(404);
    expect((await b.owner.client.delete(`${b.ws}/contacts/${created.body.id}`)).status).toBe(404);
  });
});

describe("SQL injection has no effect", () => {
  test.each(INJECTIONS)("in the workspace path: %s", async (evil) => {
    const { owner } = await ownerWithWorkspace(app.baseUrl);
    const path = `/api/workspaces/${encodeURIComponent(evil)}`;
    for (const res of [
      await owner.client.get(path),
      await owner.client.get(`${path}/members`),
      await owner.client.get(`${path}/contacts`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe("FORBIDDEN");
    }
  });

  test.each(INJECTIONS)("in member and contact ids, search and filters: %s", async (evil) => {
    const { owner, workspaceId, ws } = await ownerWithWorkspace(app.baseUrl);
    const c = owner.client;
    const contact = await c.post(`${ws}/contacts`, { email: uniqueEmail(), firstName: "Real" });
    expect(contact.status).toBe(201);
    const other = await ownerWithWorkspace(app.baseUrl);
    await other.owner.client.post(`${other.ws}/contacts`, { email: uniqueEmail(), firstName: "Foreign" });

    const id = encodeURIComponent(evil);
    expect((await c.patch(`${ws}/members/${id}`, { role: "VIEWER" })).status).toBe(404);
    expect((await c.delete(`${ws}/members/${id}`)).status).toBe(404);
    expect((await c.delete(`${ws}/keys/${id}`)).status).toBe(404);
    expect((await c.get(`${ws}/contacts/${id}`)).status).toBe(404);
    expect((await c.delete(`${ws}/contacts/${id}`)).status).toBe(404);

    const search = await c.get(`${ws}/contacts?search=${id}`);
    expect(search.status).toBe(200);
    expect(search.body.data).toEqual([]);
    const audit = await c.get(`${ws}/audit-logs?action=${id}&actorId=${id}`);
    expect(audit.status).toBe(200);
    expect(audit.body.pagination.total).toBe(0);

    // Stored verbatim as data, never interpreted.
    const named = await c.patch(ws, { name: evil });
    expect(named.status).toBe(200);
    expect(named.body.name).toBe(evil);
    const found = await c.post(`${ws}/contacts`, { email: uniqueEmail(), firstName: evil });
    expect(found.status).toBe(201);
    expect(found.body.firstName).toBe(evil);

    // Nothing else was touched: every table still there, every row still there.
    const counts = await db.query(
      "SELECT (SELECT count(*) FROM members WHERE workspace_id = $1)::int AS members, (SELECT count(*) FROM contacts WHERE workspace_id = $1)::int AS contacts, (SELECT count(*) FROM contacts WHERE workspace_id = $2)::int AS foreign",
      [workspaceId, other.workspaceId],
    );
    expect(counts.rows[0]).toEqual({ members: 1, contacts: 2, foreign: 1 });
    expect((await c.get(`${ws}/members`)).body).toHaveLength(1);
  });
});
