import { Client } from "pg";
import { open } from "../../../lib/secret-box";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp, type SignedInUser } from "../../helpers/http";

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

/** A user added to the workspace with the given role; returns the user and the member id. */
async function addMember(owner: SignedInUser, ws: string, role: string) {
  const user = await signUp(app.baseUrl, `A ${role}`);
  const res = await owner.client.post(`${ws}/members`, { email: user.email, role });
  expect(res.status).toBe(201);
  return { user, memberId: res.body.id as string };
}

describe("workspaces", () => {
  test("create answers 201 with the contract shape and the caller is OWNER", async () => {
    const user = await signUp(app.baseUrl);
    const res = await user.client.post("/api/workspaces", { name: "Café Crème", slug: undefined });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.any(String),
      name: "Café Crème",
      slug: "cafe-creme",
      role: "OWNER",
    });
    expect(new Date(res.body.createdAt).toString()).not.toBe("Invalid Date");
    const list = await user.client.get("/api/workspaces");
    expect(list.status).toBe(200);
    expect(list.body).toEqual([expect.objectContaining({ id: res.body.id, role: "OWNER" })]);
  });

  test("a derived slug that is taken gets a suffix; an explicit taken slug is 409", async () => {
    const user = await signUp(app.baseUrl);
    const slug = `team-${Date.now().toString(36)}`;
    const first = await user.client.post("/api/workspaces", { name: "Team", slug });
    expect(first.status).toBe(201);
    expect(first.body.slug).toBe(slug);
    const taken = await user.client.post("/api/workspaces", { name: "Other", slug });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe("CONFLICT");
    const derived1 = await user.client.post("/api/workspaces", { name: slug });
    const derived2 = await user.client.post("/api/workspaces", { name: slug });
    expect(derived1.status).toBe(201);
    expect(derived2.status).toBe(201);
    expect(derived2.body.slug).not.toBe(derived1.body.slug);
    expect(derived2.body.slug.startsWith(slug.slice(0, 10))).toBe(true);
  });

  test.each([
    [{ name: "" }, "name"],
    [{}, "name"],
    [{ name: "x".repeat(101) }, "name"],
    [{ name: 42 }, "name"],
    [{ name: "Ok", slug: "Bad Slug!" }, "slug"],
    [{ name: "Ok", slug: "-lead" }, "slug"],
    [{ name: "Ok", slug: "a" }, "slug"],
  ])("create with %j is 400 naming %s", async (body, field) => {
    const user = await signUp(app.baseUrl);
    const res = await user.client.post("/api/workspaces", body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("VALIDATION_ERROR");
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  test("workspaces need a session", async () => {
    expect((await app.http().get("/api/workspaces")).status).toBe(401);
    expect((await app.http().post("/api/workspaces", { name: "X" })).status).toBe(401);
  });

  test("settings: bad values are 400 naming settings.<key>, zones and locales normalised, null turns a key off", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const refused = async (settings: Record<string, unknown>, field: string) => {
      const res = await owner.client.patch(ws, { settings });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("VALIDATION_ERROR");
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    };
    await refused({ timezone: "Mars/Olympus" }, "settings.timezone");
    await refused({ defaultLocale: "not a locale!" }, "settings.defaultLocale");
    await refused({ quietHours: { start: "25:00", end: "08:00" } }, "settings.quietHours.start");
    await refused({ frequencyCap: { count: 0, periodHours: 24 } }, "settings.frequencyCap.count");
    await refused(
      { frequencyCap: { count: 1, periodHours: 24, channels: ["fax"] } },
      "settings.frequencyCap.channels[0]",
    );
    await refused({ topics: [{ key: "has space", name: "x" }] }, "settings.topics[0].key");
    await refused({ tracking: { opens: "yes" } }, "settings.tracking.opens");
    await refused({ translation: { apiKey: "k" } }, "settings.translation.baseUrl");
    await refused(
      { externaltool: { baseUrl: "https://us1.api.mailchimp.com" } },
      "settings.externaltool.apiKey",
    );
    await refused({ externaltool: { baseUrl: "ftp://x", apiKey: "k" } }, "settings.externaltool.baseUrl");
    await refused({ sender: { fromEmail: "nobody" } }, "settings.sender.fromEmail");
    await refused({ allowedOrigins: ["https://example.com/path"] }, "settings.allowedOrigins[0]");
    // Nothing of a refused update was stored.
    expect((await owner.client.get(ws)).body.settings).toEqual({});

    const saved = await owner.client.patch(ws, {
      settings: {
        timezone: "europe/paris",
        defaultLocale: "pt-br",
        quietHours: { start: "21:00", end: "08:00" },
        tracking: { opens: false },
        custom: { anything: 1 },
      },
    });
    expect(saved.status).toBe(200);
    expect(saved.body.settings).toEqual({
      timezone: "Europe/Paris",
      defaultLocale: "pt-BR",
      quietHours: { start: "21:00", end: "08:00" },
      tracking: { opens: false },
      custom: { anything: 1 },
    });
    const off = await owner.client.patch(ws, { settings: { quietHours: null } });
    expect(off.body.settings.quietHours).toBeNull();
  });

  test.each([
    ["translation", { baseUrl: "https://translate.example.com" }],
    ["externaltool", { baseUrl: "https://us1.api.mailchimp.com", listId: "a1b2c3" }],
  ])(
    "settings: the %s API key is sealed, masked in every read, kept when the mask comes back",
    async (key, rest) => {
      const { owner, ws, workspaceId } = await ownerWithWorkspace(app.baseUrl);
      const setting = { ...rest, apiKey: "secret-api-key-9876" };
      const saved = await owner.client.patch(ws, { settings: { [key]: setting } });
      expect(saved.body.settings[key]).toEqual({ ...rest, apiKey: "••••9876" });
      expect((await owner.client.get(ws)).body.settings[key].apiKey).toBe("••••9876");
      const listed = await owner.client.get("/api/workspaces");
      expect(listed.body.find((w: { id: string }) => w.id === workspaceId).settings[key].apiKey).toBe(
        "••••9876",
      );
      const storedKey = async () =>
        (
          await db.query<{ key: string }>(
            `SELECT settings->$2->>'apiKey' AS key FROM workspaces WHERE id = $1`,
            [workspaceId, key],
          )
        ).rows[0].key;
      const sealed = await storedKey();
      expect(sealed).not.toContain("secret-api-key");
      expect(open(sealed)).toBe(setting.apiKey);

      await owner.client.patch(ws, { settings: { [key]: { ...setting, apiKey: "••••9876" } } });
      expect(await storedKey()).toBe(sealed);
      const short = await owner.client.patch(ws, {
        settings: { [key]: { ...setting, apiKey: "abc" } },
      });
      expect(short.body.settings[key].apiKey).toBe("••••");
      // A mask of another secret is refused, never stored as the key.
      const stale = await owner.client.patch(ws, {
        settings: { [key]: { ...setting, apiKey: "••••9876" } },
      });
      expect(stale.status).toBe(400);
      expect(stale.body.details).toEqual([
        {
          field: `settings.${key}.apiKey`,
          message: "is the mask of no stored secret: send the secret itself",
        },
      ]);
      expect(open(await storedKey())).toBe("abc");
    },
  );

  test("GET, PATCH and DELETE one workspace", async () => {
    const { owner, workspaceId, ws } = await ownerWithWorkspace(app.baseUrl);
    const got = await owner.client.get(ws);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: workspaceId, name: "Acme", role: "OWNER" });

    const slug = `renamed-${Date.now().toString(36)}`;
    const patched = await owner.client.patch(ws, {
      name: "Renamed",
      slug,
      settings: { timezone: "Europe/Paris" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id: workspaceId,
      name: "Renamed",
      slug,
      settings: { timezone: "Europe/Paris" },
    });
    const merged = await owner.client.patch(ws, { settings: { locale: "fr" } });
    expect(merged.body.settings).toEqual({ timezone: "Europe/Paris", locale: "fr" });

    const other = await ownerWithWorkspace(app.baseUrl);
    const clash = await other.owner.client.patch(other.ws, { slug });
    expect(clash.status).toBe(409);
    const invalid = await owner.client.patch(ws, { name: "" });
    expect(invalid.status).toBe(400);
    expect(invalid.body.details[0].field).toBe("name");

    const admin = await addMember(owner, ws, "ADMIN");
    expect((await admin.user.client.delete(ws)).status).toBe(403);
    expect((await admin.user.client.patch(ws, { name: "By admin" })).status).toBe(200);

    const key = await owner.client.post(`${ws}/keys`, { name: "dies with the workspace" });
    expect((await app.http().get(ws, { bearer: key.body.key })).status).toBe(200);

    const deleted = await owner.client.delete(ws);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true });
    // Gone: no longer a member of anything there.
    expect((await owner.client.get(ws)).status).toBe(403);
    expect((await admin.user.client.get(ws)).status).toBe(403);
    const rows = await db.query("SELECT count(*)::int AS n FROM members WHERE workspace_id = $1", [
      workspaceId,
    ]);
    expect(rows.rows[0].n).toBe(0);
    // Its keys stop working at once, although the verification was cached.
    expect((await app.http().get(ws, { bearer: key.body.key })).status).toBe(401);
  });
});

describe("members", () => {
  test("list, add, change and remove members with the contract shapes", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const user = await signUp(app.baseUrl, "Mia Member");
    const added = await owner.client.post(`${ws}/members`, {
      email: user.email.toUpperCase(),
      role: "MEMBER",
    });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      id: expect.any(String),
      userId: user.id,
      role: "MEMBER",
      user: { id: user.id, name: "Mia Member", email: user.email },
    });

    const list = await owner.client.get(`${ws}/members`);
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(2);
    expect(list.body[0]).toMatchObject({
      userId: owner.id,
      role: "OWNER",
      user: { id: owner.id, email: owner.email },
    });
    expect(Object.keys(list.body[1]).sort()).toEqual(["createdAt", "id", "role", "user", "userId"]);
    // The password hash never leaks through the user.
    expect(Object.keys(list.body[1].user).sort()).toEqual(["email", "id", "name"]);

    // The new member sees the workspace with their own role, and can list members.
    expect((await user.client.get(ws)).body.role).toBe("MEMBER");
    expect((await user.client.get(`${ws}/members`)).status).toBe(200);

    const promoted = await owner.client.patch(`${ws}/members/${added.body.id}`, { role: "ADMIN" });
    expect(promoted.status).toBe(200);
    expect(promoted.body.role).toBe("ADMIN");
    // Takes effect at once (membership cache cleared).
    expect((await user.client.get(ws)).body.role).toBe("ADMIN");

    const removed = await owner.client.delete(`${ws}/members/${added.body.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true });
    expect((await user.client.get(ws)).status).toBe(403);
    expect((await owner.client.delete(`${ws}/members/${added.body.id}`)).status).toBe(404);
    expect((await owner.client.patch(`${ws}/members/nope`, { role: "ADMIN" })).status).toBe(404);
  });

  test("adding an unknown email is 404, an existing member 409, bad input 400", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const unknown = await owner.client.post(`${ws}/members`, {
      email: "nobody-here@example.test",
      role: "MEMBER",
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe("NOT_FOUND");
    const self = await owner.client.post(`${ws}/members`, { email: owner.email, role: "MEMBER" });
    expect(self.status).toBe(409);
    expect(self.body.code).toBe("CONFLICT");
    const badRole = await owner.client.post(`${ws}/members`, { email: owner.email, role: "GOD" });
    expect(badRole.status).toBe(400);
    expect(badRole.body.details[0].field).toBe("role");
    const badEmail = await owner.client.post(`${ws}/members`, { email: "not-an-email", role: "MEMBER" });
    expect(badEmail.status).toBe(400);
    expect(badEmail.body.details[0].field).toBe("email");
  });

  test("the last OWNER cannot be demoted or removed; with two owners one can go", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const members = await owner.client.get(`${ws}/members`);
    const ownerMemberId = members.body[0].id as string;
    const demote = await owner.client.patch(`${ws}/members/${ownerMemberId}`, { role: "ADMIN" });
    expect(demote.status).toBe(400);
    expect(demote.body.code).toBe("VALIDATION_ERROR");
    const remove = await owner.client.delete(`${ws}/members/${ownerMemberId}`);
    expect(remove.status).toBe(400);

    const second = await addMember(owner, ws, "OWNER");
    expect((await owner.client.patch(`${ws}/members/${ownerMemberId}`, { role: "ADMIN" })).status).toBe(200);
    // Now `second` is the last OWNER.
    const again = await second.user.client.delete(`${ws}/members/${second.memberId}`);
    expect(again.status).toBe(400);
  });

  test("two owners demoting each other at once: exactly one succeeds", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const ownerMemberId = (await owner.client.get(`${ws}/members`)).body[0].id as string;
    const second = await addMember(owner, ws, "OWNER");
    const results = await Promise.all([
      owner.client.patch(`${ws}/members/${second.memberId}`, { role: "ADMIN" }),
      second.user.client.patch(`${ws}/members/${ownerMemberId}`, { role: "ADMIN" }),
    ]);
    // The loser is refused either way it interleaves: 400 when its own check ran while it was still an
    // OWNER (the last one may not go), 403 when the winner had already made it an ADMIN (an ADMIN may not touch an OWNER).
    const [won, lost] = [...results].sort((a, b) => a.status - b.status);
    expect(won.status).toBe(200);
    expect(
      (lost.status === 400 && /OWNER/.test(lost.body.error)) ||
        (lost.status === 403 && lost.body.code === "FORBIDDEN"),
    ).toBe(true);
    const owners = (
      await db.query(
        "SELECT count(*)::int AS n FROM members m JOIN workspaces w ON w.id = m.workspace_id WHERE m.role = 'OWNER' AND w.id = $1",
        [ws.split("/").pop()],
      )
    ).rows[0].n;
    expect(owners).toBe(1);
  });

  test("an ADMIN cannot touch OWNERs nor grant OWNER; MEMBER and VIEWER cannot manage members", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const ownerMemberId = (await owner.client.get(`${ws}/members`)).body[0].id as string;
    const admin = await addMember(owner, ws, "ADMIN");
    const member = await addMember(owner, ws, "MEMBER");
    const viewer = await addMember(owner, ws, "VIEWER");
    const outsider = await signUp(app.baseUrl);

    const a = admin.user.client;
    expect((await a.patch(`${ws}/members/${ownerMemberId}`, { role: "VIEWER" })).status).toBe(403);
    expect((await a.delete(`${ws}/members/${ownerMemberId}`)).status).toBe(403);
    expect((await a.patch(`${ws}/members/${member.memberId}`, { role: "OWNER" })).status).toBe(403);
    expect((await a.post(`${ws}/members`, { email: outsider.email, role: "OWNER" })).status).toBe(403);
    // An ADMIN may manage non-owners.
    expect((await a.patch(`${ws}/members/${member.memberId}`, { role: "VIEWER" })).status).toBe(200);
    expect((await a.post(`${ws}/members`, { email: outsider.email, role: "MEMBER" })).status).toBe(201);

    for (const who of [member, viewer]) {
      const c = who.user.client;
      expect((await c.post(`${ws}/members`, { email: owner.email, role: "MEMBER" })).status).toBe(403);
      expect((await c.patch(`${ws}/members/${admin.memberId}`, { role: "VIEWER" })).status).toBe(403);
      expect((await c.delete(`${ws}/members/${admin.memberId}`)).status).toBe(403);
    }
    const roles = await owner.client.get(`${ws}/members`);
    expect(roles.body.find((m: { id: string }) => m.id === ownerMemberId).role).toBe("OWNER");
    expect(roles.body.find((m: { id: string }) => m.id === admin.memberId).role).toBe("ADMIN");
  });

  test("a member id of another workspace is 404", async () => {
    const a = await ownerWithWorkspace(app.baseUrl);
    const b = await ownerWithWorkspace(app.baseUrl);
    const bMember = await addMember(b.owner, b.ws, "MEMBER");
    expect(
      (await a.owner.client.patch(`${a.ws}/members/${bMember.memberId}`, { role: "VIEWER" })).status,
    ).toBe(404);
    expect((await a.owner.client.delete(`${a.ws}/members/${bMember.memberId}`)).status).toBe(404);
    const still = await b.owner.client.get(`${b.ws}/members`);
    expect(still.body.find((m: { id: string }) => m.id === bMember.memberId).role).toBe("MEMBER");
  });
});

describe("audit log", () => {
  test("every change is logged with actor and ip; list is paginated and filterable", async () => {
    const { owner, workspaceId, ws } = await ownerWithWorkspace(app.baseUrl);
    const ip = "203.0.113.77";
    const headers = { "x-forwarded-for": ip };
    const c = owner.client;
    const user = await signUp(app.baseUrl);
    const added = await c.request("POST", `${ws}/members`, {
      body: { email: user.email, role: "MEMBER" },
      headers,
    });
    await c.request("PATCH", `${ws}/members/${added.body.id}`, { body: { role: "VIEWER" }, headers });
    await c.request("DELETE", `${ws}/members/${added.body.id}`, { headers });
    await c.request("PATCH", ws, { body: { name: "Audited" }, headers });
    const key = await c.request("POST", `${ws}/keys`, { body: { name: "k" }, headers });
    await c.request("DELETE", `${ws}/keys/${key.body.id}`, { headers });

    const res = await c.get(`${ws}/audit-logs?limit=100`);
    expect(res.status).toBe(200);
    expect(res.body.pagination).toEqual({ page: 1, limit: 100, total: 7, totalPages: 1 });
    const actions = res.body.data.map((e: { action: string }) => e.action);
    expect(actions).toEqual([
      "api_key.revoked",
      "api_key.created",
      "workspace.updated",
      "member.removed",
      "member.updated",
      "member.added",
      "workspace.created",
    ]);
    for (const entry of res.body.data.slice(0, 6)) {
      expect(entry).toMatchObject({ workspaceId, actorType: "user", actorId: owner.id, ip });
    }
    expect(res.body.data[0]).toMatchObject({ targetType: "api_key", targetId: key.body.id });
    expect(res.body.data[5]).toMatchObject({ targetType: "member", targetId: added.body.id });
    // The key itself never lands in the log.
    expect(JSON.stringify(res.body)).not.toContain(key.body.key);

    const page2 = await c.get(`${ws}/audit-logs?limit=3&page=2`);
    expect(page2.body.pagination).toEqual({ page: 2, limit: 3, total: 7, totalPages: 3 });
    expect(page2.body.data.map((e: { action: string }) => e.action)).toEqual(actions.slice(3, 6));

    const byAction = await c.get(`${ws}/audit-logs?action=member.updated`);
    expect(byAction.body.data.map((e: { action: string }) => e.action)).toEqual(["member.updated"]);
    const byPrefix = await c.get(`${ws}/audit-logs?action=api_key.*`);
    expect(byPrefix.body.pagination.total).toBe(2);
    // A prefix is literal text: `%` and `_` are not wildcards.
    expect((await c.get(`${ws}/audit-logs?action=${encodeURIComponent("%*")}`)).body.pagination.total).toBe(
      0,
    );
    expect(
      (await c.get(`${ws}/audit-logs?action=api${encodeURIComponent("_")}key.*`)).body.pagination.total,
    ).toBe(2);
    expect(
      (await c.get(`${ws}/audit-logs?action=api${encodeURIComponent("__")}ey.*`)).body.pagination.total,
    ).toBe(0);

    // A time window keeps the entries from `from` to `to`, both included.
    const [newest, , , , , , oldest] = res.body.data as Array<{ createdAt: string }>;
    const since = await c.get(`${ws}/audit-logs?limit=100&from=${encodeURIComponent(newest.createdAt)}`);
    expect(since.body.data.length).toBeGreaterThanOrEqual(1);
    expect(since.body.data.every((e: { createdAt: string }) => e.createdAt >= newest.createdAt)).toBe(true);
    expect(since.body.data.map((e: { action: string }) => e.action)).not.toContain("workspace.created");
    const until = await c.get(`${ws}/audit-logs?limit=100&to=${encodeURIComponent(oldest.createdAt)}`);
    expect(until.body.data.map((e: { action: string }) => e.action)).toContain("workspace.created");
    expect(until.body.data.every((e: { createdAt: string }) => e.createdAt <= oldest.createdAt)).toBe(true);
    expect(until.body.data.map((e: { action: string }) => e.action)).not.toContain("api_key.revoked");

    // Another actor: an ADMIN's change carries the ADMIN's id; filter by actor.
    const admin = await signUp(app.baseUrl);
    await c.post(`${ws}/members`, { email: admin.email, role: "ADMIN" });
    await admin.client.patch(ws, { settings: { a: 1 } });
    const byActor = await c.get(`${ws}/audit-logs?actorId=${admin.id}`);
    expect(byActor.body.data).toEqual([
      expect.objectContaining({ action: "workspace.updated", actorId: admin.id }),
    ]);
    // A change made with an API key names the key as the actor.
    const settingsKey = await c.post(`${ws}/keys`, { name: "settings", scopes: ["settings.manage"] });
    const byKey = await app.http().request("PATCH", ws, {
      body: { name: "By key" },
      bearer: settingsKey.body.key,
      headers: { "x-forwarded-for": "198.51.100.9" },
    });
    expect(byKey.status).toBe(200);
    const keyEntries = await c.get(`${ws}/audit-logs?actorId=${settingsKey.body.id}`);
    expect(keyEntries.body.data).toEqual([
      expect.objectContaining({
        action: "workspace.updated",
        actorType: "api_key",
        actorId: settingsKey.body.id,
        ip: "198.51.100.9",
      }),
    ]);
    const nobody = await c.get(`${ws}/audit-logs?actorId=${encodeURIComponent("' OR 1=1 --")}`);
    expect(nobody.status).toBe(200);
    expect(nobody.body.pagination.total).toBe(0);
  });

  test("bad paging is 400; MEMBER and VIEWER cannot read the log", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    const bad = await owner.client.get(`${ws}/audit-logs?limit=0`);
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].field).toBe("limit");
    for (const role of ["MEMBER", "VIEWER"]) {
      const m = await addMember(owner, ws, role);
      expect((await m.user.client.get(`${ws}/audit-logs`)).status).toBe(403);
    }
  });
});
