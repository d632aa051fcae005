import { readFileSync } from "node:fs";
import path from "node:path";
import { ServiceBroker, type Context } from "moleculer";
import type { AppMeta } from "../../lib/moleculer-types";
import { systemCall } from "../../lib/system-call";
import { ROOT, sourceFiles } from "../helpers/source-files";
import { asWorkspaceId } from "../../lib/tenancy";

// Where the system principal may be set by hand, and why:
const SYSTEM_PRINCIPAL_ALLOWED = [
  // the one way to call as the system
  path.join("lib", "system-call.ts"),
  // the authenticate step: an internal call (cron, timers) is the system's own request
  path.join("services", "api", "authenticate.ts"),
];

test("the system principal is given to a call only through systemCall", () => {
  const building = ["services", "mixins", "lib"]
    .flatMap((dir) => sourceFiles(dir))
    .filter((file) => /principal(?::|\s*=)\s*SYSTEM\b/.test(readFileSync(path.join(ROOT, file), "utf8")));
  expect(building.sort()).toEqual([...SYSTEM_PRINCIPAL_ALLOWED].sort());
});

describe("systemCall", () => {
  const broker = new ServiceBroker({ logger: false, nodeID: "system-call-test" });
  type Ctx = Context<Record<string, unknown>, AppMeta>;
  const seen: Array<{ meta: AppMeta; requestID: string | null }> = [];

  beforeAll(async () => {
    broker.createService({
      name: "callee",
      actions: {
        // Like a gateway-facing action: it answers with its own status and headers.
        answer(ctx: Ctx) {
          seen.push({ meta: { ...ctx.meta }, requestID: ctx.requestID });
          ctx.meta.$statusCode = 202;
          ctx.meta.$responseHeaders = { "X-Callee": "yes" };
          return { ok: true };
        },
      },
    });
    broker.createService({
      name: "caller",
      actions: {
        async viaSystemCall(ctx: Ctx) {
          const answer = await systemCall<{ ok: boolean }>(
            ctx,
            asWorkspaceId("ws-2"),
            "callee.answer",
            {},
            {
              configVersions: { contacts: "3" },
            },
          );
          return { answer, meta: { ...ctx.meta } };
        },
        async viaCtxCall(ctx: Ctx) {
          const answer = await ctx.call(
            "callee.answer",
            {},
            { meta: { principal: { kind: "system" }, workspaceId: "ws-2" } },
          );
          return { answer, meta: { ...ctx.meta } };
        },
      },
    });
    await broker.start();
  });

  afterAll(() => broker.stop());

  const user = { principal: { kind: "user" as const, userId: "u-1" }, workspaceId: "ws-1" };

  test("calls as the system and leaves the caller's principal and answer untouched", async () => {
    seen.length = 0;
    const { answer, meta } = await broker.call<{ answer: unknown; meta: AppMeta }, object>(
      "caller.viaSystemCall",
      {},
      { meta: user, requestID: "req-1" },
    );
    expect(answer).toEqual({ ok: true });
    expect(seen[0].meta).toMatchObject({
      principal: { kind: "system" },
      workspaceId: "ws-2",
      configVersions: { contacts: "3" },
    });
    // Same request: the callee's context carries the caller's request id.
    expect(seen[0].requestID).toBe("req-1");
    expect(meta).toEqual(user);
  });

  test("from the broker it calls as the system with no parent", async () => {
    seen.length = 0;
    await systemCall(broker, asWorkspaceId("ws-3"), "callee.answer");
    expect(seen[0].meta).toEqual({ principal: { kind: "system" }, workspaceId: "ws-3" });
  });

  // Why systemCall exists: ctx.call merges the callee's meta back into the caller's.
  test("ctx.call would leave the caller acting as the system with the callee's status", async () => {
    const { meta } = await broker.call<{ meta: AppMeta }, object>("caller.viaCtxCall", {}, { meta: user });
    expect(meta).toMatchObject({ principal: { kind: "system" }, $statusCode: 202 });
  });
});
