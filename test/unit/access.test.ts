import { readFileSync } from "node:fs";
import path from "node:path";
import {
  decideAccess,
  isAdminRole,
  requires,
  roleHasPermission,
  ROLES,
  SCOPES,
  scopesAllow,
  SYSTEM,
  type AccessDeclaration,
  type Principal,
} from "../../lib/access";
import type { Role } from "../../models";
import { ROOT, sourceFiles } from "../helpers/source-files";
import { asWorkspaceId } from "../../lib/tenancy";

const MANAGE = [
  "settings.manage",
  "members.manage",
  "api_keys.manage",
  "webhooks.manage",
  "providers.manage",
];

/** The contract's role table, written out independently of lib/access. */
function contractAllows(role: Role, scope: string): boolean {
  if (role === "OWNER" || role === "ADMIN") return true;
  if (role === "MEMBER") return !MANAGE.includes(scope);
  return scope.endsWith(".read");
}

const WS = "ws_1";
const user: Principal = { kind: "user", userId: "u1", email: "u@example.test" };
const key = (scopes: string[], workspaceId = WS): Principal => ({
  kind: "apiKey",
  apiKeyId: "k1",
  workspaceId: asWorkspaceId(workspaceId),
  scopes,
});

describe("the scope table", () => {
  test("has the specification's 22 scopes, 5 of them *.manage", () => {
    expect(SCOPES).toHaveLength(22);
    expect(SCOPES.filter((s) => s.endsWith(".manage")).sort()).toEqual([...MANAGE].sort());
    expect(SCOPES).toContain("analytics.read");
  });

  test.each(ROLES)("role %s holds exactly the contract's permissions", (role) => {
    for (const scope of SCOPES)
      expect([scope, roleHasPermission(role, scope)]).toEqual([scope, contractAllows(role, scope)]);
    expect(roleHasPermission(role, "no.such")).toBe(false);
  });

  test("scopesAllow: [] and * grant everything, otherwise the exact name", () => {
    expect(scopesAllow([], "contacts.read")).toBe(true);
    expect(scopesAllow(["*"], "members.manage")).toBe(true);
    expect(scopesAllow(["contacts.read"], "contacts.read")).toBe(true);
    expect(scopesAllow(["contacts.read"], "contacts.write")).toBe(false);
    expect(scopesAllow(["contacts.*"], "contacts.write")).toBe(false);
  });

  test("isAdminRole is OWNER or ADMIN", () => {
    expect(ROLES.filter(isAdminRole)).toEqual(["OWNER", "ADMIN"]);
    expect(isAdminRole(undefined)).toBe(false);
  });
});

describe("decideAccess", () => {
  const allowed = { allow: true };

  test("public routes admit everyone, even without a principal", () => {
    for (const principal of [undefined, SYSTEM, user, key([])]) {
      expect(decideAccess({ auth: "public" }, principal, {})).toEqual(allowed);
      expect(
        decideAccess({ auth: "public", permission: "contacts.read" }, principal, { workspaceId: WS }),
      ).toEqual(allowed);
    }
  });

  test.each<AccessDeclaration["auth"]>(["session", "any", "cron", undefined])(
    "no principal on auth=%s is 401",
    (auth) => {
      expect(decideAccess({ auth }, undefined, {})).toMatchObject({ allow: false, status: 401 });
    },
  );

  test("the system principal passes everything that is not public", () => {
    for (const auth of ["session", "any", "cron"] as const) {
      expect(
        decideAccess({ auth, permission: "members.manage", role: "ADMIN" }, SYSTEM, { workspaceId: WS }),
      ).toEqual(allowed);
    }
  });

  test("cron routes refuse users and API keys with 401", () => {
    expect(decideAccess({ auth: "cron" }, user, {})).toMatchObject({ allow: false, status: 401 });
    expect(decideAccess({ auth: "cron" }, key([]), {})).toMatchObject({ allow: false, status: 401 });
  });

  test("session routes refuse API keys with 401, whatever their scopes", () => {
    for (const scopes of [[], ["*"], ["api_keys.manage"]]) {
      expect(
        decideAccess({ auth: "session", permission: "api_keys.manage" }, key(scopes), { workspaceId: WS }),
      ).toMatchObject({
        allow: false,
        status: 401,
      });
    }
  });

  test("a signed-in user on a route without a workspace is admitted", () => {
    expect(decideAccess({ auth: "session" }, user, {})).toEqual(allowed);
    expect(decideAccess({ auth: "any" }, user, {})).toEqual(allowed);
  });

  describe.each(["session", "any"] as const)("auth=%s, users", (auth) => {
    test("a non-member of the workspace is 403 for every scope and role", () => {
      for (const permission of [undefined, ...SCOPES]) {
        for (const role of [undefined, "ADMIN"] as const) {
          expect(decideAccess({ auth, permission, role }, user, { workspaceId: WS })).toMatchObject({
            allow: false,
            status: 403,
          });
        }
      }
    });

    test.each(ROLES)("role %s: every permission, with and without role ADMIN", (role) => {
      for (const permission of [undefined, ...SCOPES]) {
        const expected = permission === undefined || contractAllows(role, permission);
        const plain = decideAccess({ auth, permission }, user, { workspaceId: WS, role });
        expect([permission, plain.allow]).toEqual([permission, expected]);
        if (!plain.allow) expect(plain.status).toBe(403);
        const admin = decideAccess({ auth, permission, role: "ADMIN" }, user, { workspaceId: WS, role });
        expect([permission, admin.allow]).toEqual([permission, expected && isAdminRole(role)]);
        if (!admin.allow) expect(admin.status).toBe(403);
      }
    });
  });

  describe("auth=any, API keys", () => {
    test("scopes [] and [*] pass every permission in their own workspace", () => {
      for (const scopes of [[], ["*"]]) {
        for (const permission of SCOPES)
          expect(decideAccess({ auth: "any", permission }, key(scopes), { workspaceId: WS })).toEqual(
            allowed,
          );
      }
    });

    test("a scoped key passes exactly its scopes; others are 403", () => {
      const scopes = ["contacts.read", "webhooks.manage"];
      for (const permission of SCOPES) {
        const decision = decideAccess({ auth: "any", permission }, key(scopes), { workspaceId: WS });
        expect([permission, decision.allow]).toEqual([permission, scopes.includes(permission)]);
        if (!decision.allow) expect(decision.status).toBe(403);
      }
      expect(decideAccess({ auth: "any" }, key(scopes), { workspaceId: WS })).toEqual(allowed);
    });

    test("a key of another workspace is 403 even with every scope", () => {
      for (const scopes of [[], ["*"], ["contacts.read"]]) {
        expect(
          decideAccess({ auth: "any", permission: "contacts.read" }, key(scopes, "ws_other"), {
            workspaceId: WS,
          }),
        ).toMatchObject({
          allow: false,
          status: 403,
        });
      }
    });

    test("a route that needs the ADMIN role refuses keys with 403", () => {
      expect(decideAccess({ auth: "any", role: "ADMIN" }, key(["*"]), { workspaceId: WS })).toMatchObject({
        allow: false,
        status: 403,
      });
    });

    test("a key on a route without a workspace is checked on its scopes only", () => {
      expect(decideAccess({ auth: "any", permission: "contacts.read" }, key(["contacts.read"]), {})).toEqual(
        allowed,
      );
      expect(
        decideAccess({ auth: "any", permission: "contacts.write" }, key(["contacts.read"]), {}),
      ).toMatchObject({ status: 403 });
    });
  });

  test("role MEMBER: a read permission that refuses a VIEWER; keys go by their scopes", () => {
    const decl = requires("analytics.read", { role: "MEMBER" });
    for (const role of ["OWNER", "ADMIN", "MEMBER"] as const)
      expect(decideAccess(decl, user, { workspaceId: WS, role })).toEqual({ allow: true });
    expect(decideAccess(decl, user, { workspaceId: WS, role: "VIEWER" })).toMatchObject({ status: 403 });
    expect(decideAccess(decl, key(["analytics.read"]), { workspaceId: WS })).toEqual({ allow: true });
    expect(decideAccess(decl, key(["contacts.read"]), { workspaceId: WS })).toMatchObject({ status: 403 });
  });

  test("keyScope: every member's session is admitted, an API key needs that scope", () => {
    const decl: AccessDeclaration = { auth: "any", keyScope: "members.manage" };
    for (const role of ROLES)
      expect(decideAccess(decl, user, { workspaceId: WS, role })).toEqual({ allow: true });
    expect(decideAccess(decl, key(["members.manage"]), { workspaceId: WS })).toEqual({ allow: true });
    expect(decideAccess(decl, key(["*"]), { workspaceId: WS })).toEqual({ allow: true });
    expect(decideAccess(decl, key(["contacts.read"]), { workspaceId: WS })).toMatchObject({ status: 403 });
  });
});

describe("one access-declaration style", () => {
  /**
   * An action spreads a named declaration built by `requires` (lib/access.ts);
   * a permission written as a key beside `rest`, or a declaration object
   * written by hand, is the other style coming back.
   */
  test("no permission is written by hand outside lib/access.ts", () => {
    const byHand = ["services", "mixins"]
      .flatMap((dir) => sourceFiles(dir))
      .filter((file) => /\bpermission: "/.test(readFileSync(path.join(ROOT, file), "utf8")));
    expect(byHand).toEqual([]);
  });

  test("requires: the permission for a session or an API key, and what else it asks", () => {
    expect(requires("contacts.read")).toEqual({ auth: "any", permission: "contacts.read" });
    expect(requires("api_keys.manage", { auth: "session", role: "ADMIN" })).toEqual({
      auth: "session",
      role: "ADMIN",
      permission: "api_keys.manage",
    });
  });
});
