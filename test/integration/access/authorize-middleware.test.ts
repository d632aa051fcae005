import { ServiceBroker, type ServiceSchema } from "moleculer";
import type { Principal } from "../../../lib/access";
import { waitFor } from "../../helpers/wait";
import type { AppContext } from "../../../lib/moleculer-types";
import { AuthorizeMiddleware, MEMBERSHIP_CHANGED_EVENT } from "../../../mixins/authorize.middleware";
import { asWorkspaceId } from "../../../lib/tenancy";

/**
 * The middleware on a broker of its own, with a stand-in membership service,
 * to pin down the rules that the gateway tests cannot reach directly.
 */
const MEMBERSHIPS: Record<string, string> = { "ws-1:user-1": "VIEWER", "ws-2:user-1": "OWNER" };
/** Membership lookups that reached the stand-in, by workspace and user. */
const asked: string[] = [];
/** A lookup of this workspace waits until the test lets it answer. */
let heldLookup: { workspaceId: string; release?: () => void } | null = null;

const probe = (ctx: AppContext) => ({
  workspaceId: ctx.meta.workspaceId ?? null,
  role: ctx.meta.role ?? null,
});

const services: ServiceSchema[] = [
  {
    name: "workspaces",
    actions: {
      async membership(ctx: AppContext<{ workspaceId: string; userId: string }>) {
        const key = `${ctx.params.workspaceId}:${ctx.params.userId}`;
        asked.push(key);
        const role = MEMBERSHIPS[key] ?? null;
        if (heldLookup?.workspaceId === ctx.params.workspaceId)
          await new Promise<void>((resolve) => (heldLookup!.release = resolve));
        return role;
      },
    },
  },
  {
    name: "probe",
    actions: {
      scoped: {
        rest: "GET /workspaces/:workspaceId/things",
        auth: "any",
        permission: "contacts.read",
        handler: probe,
      },
      scopedObject: {
        rest: { method: "POST", path: "/workspaces/:workspaceId/things/import" },
        auth: "any",
        permission: "contacts.write",
        handler: probe,
      },
      unscoped: { rest: "POST /things", auth: "session", handler: probe },
      open: { rest: "POST /open", auth: "public", handler: probe },
      internal: { auth: "any", handler: probe },
    },
  },
];

let broker: ServiceBroker;
beforeAll(async () => {
  broker = new ServiceBroker({ logger: false, middlewares: [AuthorizeMiddleware] });
  for (const s of services) broker.createService(s);
  await broker.start();
});
afterAll(() => broker.stop());

const user: Principal = { kind: "user", userId: "user-1" };
const call = (action: string, params: Record<string, unknown>, principal?: Principal) =>
  broker.call(action, params, { meta: { principal } });

test("a path-scoped action gets the path's workspace and the caller's role", async () => {
  await expect(call("probe.scoped", { workspaceId: "ws-1" }, user)).resolves.toEqual({
    workspaceId: "ws-1",
    role: "VIEWER",
  });
  await expect(call("probe.scopedObject", { workspaceId: "ws-2" }, user)).resolves.toEqual({
    workspaceId: "ws-2",
    role: "OWNER",
  });
  await expect(call("probe.scopedObject", { workspaceId: "ws-1" }, user)).rejects.toMatchObject({
    code: 403,
    type: "FORBIDDEN",
  });
  await expect(call("probe.scoped", { workspaceId: "ws-9" }, user)).rejects.toMatchObject({ code: 403 });
  await expect(call("probe.scoped", { workspaceId: "ws-1" })).rejects.toMatchObject({
    code: 401,
    type: "UNAUTHORIZED",
  });
});

test("a workspaceId in the body of a route without :workspaceId never sets the tenancy", async () => {
  await expect(call("probe.unscoped", { workspaceId: "ws-2" }, user)).resolves.toEqual({
    workspaceId: null,
    role: null,
  });
  await expect(call("probe.open", { workspaceId: "ws-2" })).resolves.toEqual({
    workspaceId: null,
    role: null,
  });
  // Not a member of ws-9: still no 403, because the body's value is ignored altogether.
  await expect(call("probe.unscoped", { workspaceId: "ws-9" }, user)).resolves.toEqual({
    workspaceId: null,
    role: null,
  });
});

test("an internal action (no rest) with auth takes the workspace its caller passes, after the same checks", async () => {
  await expect(call("probe.internal", { workspaceId: "ws-2" }, user)).resolves.toEqual({
    workspaceId: "ws-2",
    role: "OWNER",
  });
  await expect(call("probe.internal", { workspaceId: "ws-9" }, user)).rejects.toMatchObject({ code: 403 });
  const key: Principal = { kind: "apiKey", apiKeyId: "k", workspaceId: asWorkspaceId("ws-1"), scopes: [] };
  await expect(call("probe.internal", { workspaceId: "ws-2" }, key)).rejects.toMatchObject({ code: 403 });
  await expect(call("probe.internal", { workspaceId: "ws-1" }, key)).resolves.toEqual({
    workspaceId: "ws-1",
    role: null,
  });
});

test("a REST action without auth is refused at start-up", async () => {
  const b = new ServiceBroker({ logger: false, middlewares: [AuthorizeMiddleware] });
  expect(() =>
    b.createService({ name: "bad", actions: { x: { rest: "GET /x", handler: () => 1 } } }),
  ).toThrow(/declares no 'auth'/);
  await b.stop();
});

test("a role is looked up once, until a member change is broadcast; a lookup in flight across it is not kept", async () => {
  MEMBERSHIPS["ws-3:user-1"] = "ADMIN";
  asked.length = 0;
  for (let i = 0; i < 3; i++)
    await expect(call("probe.scoped", { workspaceId: "ws-3" }, user)).resolves.toEqual({
      workspaceId: "ws-3",
      role: "ADMIN",
    });
  expect(asked).toEqual(["ws-3:user-1"]);

  // Removed: the workspaces service broadcasts the change, and the next call is refused.
  delete MEMBERSHIPS["ws-3:user-1"];
  await broker.broadcast(MEMBERSHIP_CHANGED_EVENT);
  await expect(call("probe.scoped", { workspaceId: "ws-3" }, user)).rejects.toMatchObject({ code: 403 });
  expect(asked).toEqual(["ws-3:user-1", "ws-3:user-1"]);

  // Added back while a lookup that read "not a member" is still answering: that answer is not kept.
  await broker.broadcast(MEMBERSHIP_CHANGED_EVENT);
  heldLookup = { workspaceId: "ws-3" };
  const inFlight = call("probe.scoped", { workspaceId: "ws-3" }, user);
  await waitFor(() => heldLookup?.release, 5_000, "the held lookup");
  MEMBERSHIPS["ws-3:user-1"] = "MEMBER";
  await broker.broadcast(MEMBERSHIP_CHANGED_EVENT);
  heldLookup.release!();
  heldLookup = null;
  await expect(inFlight).rejects.toMatchObject({ code: 403 });
  await expect(call("probe.scoped", { workspaceId: "ws-3" }, user)).resolves.toEqual({
    workspaceId: "ws-3",
    role: "MEMBER",
  });
  expect(asked).toHaveLength(4);
});
