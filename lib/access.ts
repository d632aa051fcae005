import type { Role } from "../models";
import { forbidden } from "./errors";
import type { WorkspaceId } from "./workspace-id";

/** Scopes of the specification's table; API-key scopes and role permissions use the same names. */
export const SCOPES = [
  "contacts.read",
  "contacts.write",
  "contacts.delete",
  "campaigns.read",
  "campaigns.write",
  "campaigns.delete",
  "templates.read",
  "templates.write",
  "templates.delete",
  "segments.read",
  "segments.write",
  "segments.delete",
  "forms.read",
  "forms.write",
  "inbox.read",
  "inbox.write",
  "analytics.read",
  "settings.manage",
  "members.manage",
  "api_keys.manage",
  "webhooks.manage",
  "providers.manage",
] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES: Role[] = ["OWNER", "ADMIN", "MEMBER", "VIEWER"];

const isDataScope = (s: string) => /\.(read|write|delete)$/.test(s);

const ROLE_PERMISSIONS: Record<Role, ReadonlySet<string>> = {
  OWNER: new Set(SCOPES),
  ADMIN: new Set(SCOPES),
  MEMBER: new Set(SCOPES.filter((s) => isDataScope(s))),
  VIEWER: new Set(SCOPES.filter((s) => s.endsWith(".read"))),
};

export function roleHasPermission(role: Role, permission: string): boolean {
  return ROLE_PERMISSIONS[role].has(permission);
}

/** `[]` or `["*"]` grants every permission (specification section 5, rule 3). */
export function scopesAllow(scopes: string[], permission: string): boolean {
  return scopes.length === 0 || scopes.includes("*") || scopes.includes(permission);
}

export const isAdminRole = (role: Role | undefined) => role === "OWNER" || role === "ADMIN";

/** Who is calling: a signed-in person, an API key, or background work of the service itself. */
export type Principal =
  | { kind: "user"; userId: string; email?: string; name?: string }
  | { kind: "apiKey"; apiKeyId: string; workspaceId: WorkspaceId; scopes: string[] }
  | { kind: "system" };

export const SYSTEM: Principal = { kind: "system" };

/** `cron`: the bearer CRON_SECRET of `GET /api/cron/tick`, checked by the gateway. */
export type AuthMode = "public" | "session" | "any" | "cron";

/** Access rules an action declares next to its `rest` route. */
export interface AccessDeclaration {
  auth?: AuthMode;
  permission?: string;
  /** `ADMIN`: OWNER or ADMIN. `MEMBER`: any role but VIEWER (a write behind a read permission). */
  role?: "ADMIN" | "MEMBER";
  /** A route every member's session may call (no `permission`) still asks an API key for this scope. */
  keyScope?: string;
}

/**
 * The one way an action declares its access: it spreads a named declaration
 * beside its `rest` route (`...read`, `...write`, `...remove`, `...manage`).
 * An area names its declarations once, at the top of the file or in its
 * shared module (`export const ACCESS = { read: requires("contacts.read"),
 * ... }`), each built here: the permission, for a session or an API key
 * with that scope (`auth: "any"`), and what else it asks (`auth: "session"`,
 * `role: "ADMIN"`). Only access without a permission is written as keys
 * beside `rest`: `auth: "public"`, `auth: "cron"`, `auth: "session"` with
 * `role: "ADMIN"`, `keyScope`.
 */
export function requires(
  permission: Scope,
  more: { auth?: "any" | "session"; role?: "ADMIN" | "MEMBER" } = {},
): AccessDeclaration & { permission: Scope } {
  return { auth: "any", permission, ...more };
}

export type AccessDecision = { allow: true } | { allow: false; status: 401 | 403; reason: string };

const deny = (status: 401 | 403, reason: string): AccessDecision => ({ allow: false, status, reason });

/**
 * The authorization rule, as a pure function. `workspaceId` is the workspace
 * the call targets (if any) and `role` the caller's membership role in it.
 */
export function decideAccess(
  decl: AccessDeclaration,
  principal: Principal | undefined,
  target: { workspaceId?: string; role?: Role },
): AccessDecision {
  if (decl.auth === "public") return { allow: true };
  if (!principal) return deny(401, "Authentication required");
  if (principal.kind === "system") return { allow: true };
  if (decl.auth === "cron") return deny(401, "This endpoint needs the cron secret");
  if (decl.auth === "session" && principal.kind !== "user")
    return deny(401, "This endpoint needs a signed-in session");

  if (principal.kind === "apiKey") {
    if (target.workspaceId && principal.workspaceId !== target.workspaceId) {
      return deny(403, "This API key belongs to another workspace");
    }
    if (decl.role === "ADMIN") return deny(403, "This endpoint needs the ADMIN role");
    const scope = decl.permission ?? decl.keyScope;
    if (scope && !scopesAllow(principal.scopes, scope)) {
      return deny(403, `This API key lacks the ${scope} scope`);
    }
    return { allow: true };
  }

  if (target.workspaceId && !target.role) return deny(403, "Not a member of this workspace");
  if (decl.role === "ADMIN" && !isAdminRole(target.role))
    return deny(403, "This endpoint needs the ADMIN role");
  if (decl.role === "MEMBER" && target.role === "VIEWER")
    return deny(403, "This endpoint is not open to the VIEWER role");
  if (decl.permission && target.role && !roleHasPermission(target.role, decl.permission)) {
    return deny(403, `Your role lacks the ${decl.permission} permission`);
  }
  return { allow: true };
}

/** Whether the caller holds `permission` in the workspace of `meta` (its role, or its API key's scopes). */
export function holdsPermission(
  meta: { principal?: Principal; workspaceId?: WorkspaceId; role?: Role },
  permission: string,
): boolean {
  return decideAccess({ auth: "any", permission }, meta.principal, meta).allow;
}

/**
 * The one permission check inside a handler, for an action that needs more
 * for some inputs than its declaration says (a bulk delete, a merge): 403
 * with `message` when the caller's role or key does not hold `permission`.
 */
export function requirePermission(
  meta: { principal?: Principal; workspaceId?: WorkspaceId; role?: Role },
  permission: Scope,
  message: string,
): void {
  if (!holdsPermission(meta, permission)) throw forbidden(message);
}
