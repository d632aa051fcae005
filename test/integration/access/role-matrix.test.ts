import { Client } from "pg";
import { newId } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace, signUp, uniqueEmail, type SignedInUser } from "../../helpers/http";

/**
 * Every kind of protected route against every kind of caller, through the
 * real gateway. The expectation of each cell is derived from the route's
 * declared rule, so the table below is the whole specification of the test.
 */

type Role = "OWNER" | "ADMIN" | "MEMBER" | "VIEWER";
type Caller =
  | Role
  | "non-member"
  | "unknown workspace"
  | "key with scope"
  | "key without scope"
  | "revoked key"
  | "expired key"
  | "other workspace key"
  | "no credential";

interface Route {
  name: string;
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Path under the workspace, built per call (fresh fixtures for writes). */
  path: (f: Fixture, fresh: boolean) => Promise<string> | string;
  body?: () => unknown;
  ok: number;
  /** Roles the route admits. */
  roles: Role[];
  /** `session`: API keys are refused (401); a scope name: keys need it; `none`: any key of the workspace. */
  key: "session" | "none" | string;
}

interface Fixture {
  ws: string;
  workspaceId: string;
  owner: SignedInUser;
  /** A contact / member of the workspace: a new one when the call may succeed (and so consume it), else a shared one. */
  contactId: (fresh: boolean) => Promise<string>;
  memberId: (fresh: boolean) => Promise<string>;
}

const ALL: Role[] = ["OWNER", "ADMIN", "MEMBER", "VIEWER"];
const ADMINS: Role[] = ["OWNER", "ADMIN"];
const WRITERS: Role[] = ["OWNER", "ADMIN", "MEMBER"];

const routes: Route[] = [
  { name: "workspace read", method: "GET", path: () => "", ok: 200, roles: ALL, key: "none" },
  {
    name: "settings.manage PATCH",
    method: "PATCH",
    path: () => "",
    body: () => ({ settings: { touched: newId() } }),
    ok: 200,
    roles: ADMINS,
    key: "settings.manage",
  },
  { name: "members list", method: "GET", path: () => "/members", ok: 200, roles: ALL, key: "members.manage" },
  {
    name: "members.manage add",
    method: "POST",
    path: async () => "/members",
    body: () => ({ email: pendingEmails.shift(), role: "VIEWER" }),
    ok: 201,
    roles: ADMINS,
    key: "members.manage",
  },
  {
    name: "members.manage change",
    method: "PATCH",
    path: async (f, fresh) => `/members/${await f.memberId(fresh)}`,
    body: () => ({ role: "MEMBER" }),
    ok: 200,
    roles: ADMINS,
    key: "members.manage",
  },
  {
    name: "members.manage remove",
    method: "DELETE",
    path: async (f, fresh) => `/members/${await f.memberId(fresh)}`,
    ok: 200,
    roles: ADMINS,
    key: "members.manage",
  },
  { name: "keys list", method: "GET", path: () => "/keys", ok: 200, roles: ADMINS, key: "session" },
  {
    name: "keys create",
    method: "POST",
    path: () => "/keys",
    body: () => ({ name: "k" }),
    ok: 201,
    roles: ADMINS,
    key: "session",
  },
  { name: "audit logs", method: "GET", path: () => "/audit-logs", ok: 200, roles: ADMINS, key: "session" },
  {
    name: "contacts list",
    method: "GET",
    path: () => "/contacts",
    ok: 200,
    roles: ALL,
    key: "contacts.read",
  },
  {
    name: "contacts create",
    method: "POST",
    path: () => "/contacts",
    body: () => ({ email: uniqueEmail("c") }),
    ok: 201,
    roles: WRITERS,
    key: "contacts.write",
  },
  {
    name: "contact read",
    method: "GET",
    path: async (f, fresh) => `/contacts/${await f.contactId(fresh)}`,
    ok: 200,
    roles: ALL,
    key: "contacts.read",
  },
  {
    name: "contact update",
    method: "PATCH",
    path: async (f, fresh) => `/contacts/${await f.contactId(fresh)}`,
    body: () => ({ firstName: "Changed" }),
    ok: 200,
    roles: WRITERS,
    key: "contacts.write",
  },
  {
    name: "contact delete",
    method: "DELETE",
    path: async (f, fresh) => `/contacts/${await f.contactId(fresh)}`,
    ok: 200,
    roles: WRITERS,
    key: "contacts.delete",
  },
];

const CALLERS: Caller[] = [
  "OWNER",
  "ADMIN",
  "MEMBER",
  "VIEWER",
  "non-member",
  "unknown workspace",
  "key with scope",
  "key without scope",
  "revoked key",
  "expired key",
  "other workspace key",
  "no credential",
];

/** What the contract says each caller gets on each route. */
function expected(route: Route, caller: Caller): number {
  switch (caller) {
    case "OWNER":
    case "ADMIN":
    case "MEMBER":
    case "VIEWER":
      return route.roles.includes(caller) ? route.ok : 403;
    case "non-member":
    case "unknown workspace":
      return 403;
    case "key with scope":
      return route.key === "session" ? 401 : route.ok;
    case "key without scope":
      return route.key === "session" ? 401 : route.key === "none" ? route.ok : 403;
    case "other workspace key":
      return route.key === "session" ? 401 : 403;
    case "revoked key":
    case "expired key":
    case "no credential":
      return 401;
  }
}

let app: TestApp;
let db: Client;
let fixture: Fixture;
const users = {} as Record<Role | "non-member", SignedInUser>;
const keys: Record<string, string> = {};
const pendingEmails: string[] = [];
/** Fixtures that refused calls may all point at: if one were wrongly allowed, the case still fails. */
const shared: { contactId?: string; memberId?: string; invitee?: string } = {};

async function createKey(
  owner: SignedInUser,
  ws: string,
  scopes: string[],
): Promise<{ id: string; key: string }> {
  const res = await owner.client.post(`${ws}/keys`, { name: `matrix ${scopes.join(",")}`, scopes });
  if (res.status !== 201) throw new Error(`key create failed: ${res.status} ${res.text}`);
  return res.body;
}

beforeAll(async () => {
  app = await startApp();
  db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  const { owner, workspaceId, ws } = await ownerWithWorkspace(app.baseUrl);
  users.OWNER = owner;
  for (const role of ["ADMIN", "MEMBER", "VIEWER"] as Role[]) {
    users[role] = await signUp(app.baseUrl, role);
    const res = await owner.client.post(`${ws}/members`, { email: users[role].email, role });
    if (res.status !== 201) throw new Error(`member add failed: ${res.status} ${res.text}`);
  }
  users["non-member"] = (await ownerWithWorkspace(app.baseUrl)).owner;

  fixture = {
    ws,
    workspaceId,
    owner,
    async contactId(fresh) {
      if (!fresh && shared.contactId) return shared.contactId;
      const res = await owner.client.post(`${ws}/contacts`, { email: uniqueEmail("fixture") });
      if (res.status !== 201) throw new Error(`contact create failed: ${res.status} ${res.text}`);
      if (!fresh) shared.contactId = res.body.id;
      return res.body.id;
    },
    async memberId(fresh) {
      if (!fresh && shared.memberId) return shared.memberId;
      const user = await signUp(app.baseUrl, "Target");
      const res = await owner.client.post(`${ws}/members`, { email: user.email, role: "VIEWER" });
      if (res.status !== 201) throw new Error(`member add failed: ${res.status} ${res.text}`);
      if (!fresh) shared.memberId = res.body.id;
      return res.body.id;
    },
  };

  for (const scope of new Set(routes.map((r) => r.key).filter((k) => k !== "session" && k !== "none"))) {
    keys[scope] = (await createKey(owner, ws, [scope])).key;
  }
  keys.none = (await createKey(owner, ws, ["analytics.read"])).key;
  keys.session = (await createKey(owner, ws, ["*"])).key;
  keys.without = (await createKey(owner, ws, ["analytics.read"])).key;
  const revoked = await createKey(owner, ws, ["*"]);
  expect((await app.http().get(ws, { bearer: revoked.key })).status).toBe(200);
  expect((await owner.client.delete(`${ws}/keys/${revoked.id}`)).status).toBe(200);
  keys.revoked = revoked.key;
  const expired = await createKey(owner, ws, ["*"]);
  await db.query("UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1", [expired.id]);
  keys.expired = expired.key;
  const other = await ownerWithWorkspace(app.baseUrl);
  keys.other = (await createKey(other.owner, other.ws, ["*"])).key;
});
afterAll(async () => {
  await db?.end();
  await app?.stop();
});

/** The request a caller makes; `ws` is replaced for "unknown workspace". */
function clientFor(caller: Caller, route: Route): { client: HttpClient; ws: string } {
  const ws = caller === "unknown workspace" ? `/api/workspaces/${newId()}` : fixture.ws;
  const bearer = (key: string) => {
    const c = app.http();
    c.bearer = key;
    return { client: c, ws };
  };
  switch (caller) {
    case "OWNER":
    case "ADMIN":
    case "MEMBER":
    case "VIEWER":
    case "non-member":
      return { client: users[caller].client, ws };
    case "unknown workspace":
      return { client: users.OWNER.client, ws };
    case "key with scope":
      return bearer(keys[route.key]);
    case "key without scope":
      return bearer(keys.without);
    case "revoked key":
      return bearer(keys.revoked);
    case "expired key":
      return bearer(keys.expired);
    case "other workspace key":
      return bearer(keys.other);
    case "no credential":
      return { client: app.http(), ws };
  }
}

const cases = routes.flatMap((route) =>
  CALLERS.map((caller) => [route.name, caller, expected(route, caller), route] as const),
);

test.each(cases)("%s as %s → %i", async (_name, caller, status, route) => {
  const { client, ws } = clientFor(caller, route);
  const fresh = status < 400;
  if (route.name === "members.manage add") {
    if (fresh || !shared.invitee) {
      const email = (await signUp(app.baseUrl, "Invitee")).email;
      if (!fresh) shared.invitee = email;
      pendingEmails.push(email);
    } else {
      pendingEmails.push(shared.invitee);
    }
  }
  const path = `${ws}${await route.path(fixture, fresh)}`;
  const res = await client.request(route.method, path, route.body ? { body: route.body() } : {});
  expect({ status: res.status, body: res.status >= 400 ? res.body : undefined }).toEqual({
    status,
    body:
      status >= 400
        ? { error: expect.any(String), code: status === 401 ? "UNAUTHORIZED" : "FORBIDDEN" }
        : undefined,
  });
});

test("the matrix covers every caller on every route", () => {
  expect(cases).toHaveLength(routes.length * CALLERS.length);
  // A sanity check that the table is not trivially uniform.
  const statuses = new Set(cases.map((c) => c[2]));
  expect([...statuses].sort()).toEqual([200, 201, 401, 403]);
});
