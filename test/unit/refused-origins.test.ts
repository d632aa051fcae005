import type { ServiceBroker } from "moleculer";
import { RefusedOrigins } from "../../lib/refused-origins";
import { asWorkspaceId } from "../../lib/tenancy";

/** A broker stand-in that keeps what was sent. */
function recorder() {
  const sent: Array<{
    workspaceId: string;
    refused: Array<{ origin: string; count: number; lastAt: string }>;
  }> = [];
  const broker = {
    call: async (_action: string, params: (typeof sent)[number]) => {
      sent.push(params);
    },
    logger: { warn: () => undefined },
  } as unknown as ServiceBroker;
  return { broker, sent };
}

describe("refused origins noted in the process", () => {
  let clock = 0;
  const now = () => new Date(Date.UTC(2026, 0, 1) + clock++ * 1000);

  it("counts each origin, sends one call per workspace, and nothing once flushed", async () => {
    const { broker, sent } = recorder();
    const log = new RefusedOrigins(broker, 60_000, now);
    log.note(asWorkspaceId("w1"), "https://a.test");
    log.note(asWorkspaceId("w1"), "https://a.test");
    log.note(asWorkspaceId("w1"), "https://b.test");
    log.note(asWorkspaceId("w2"), "https://a.test");
    await log.flush();
    expect(sent).toHaveLength(2);
    expect(sent[0].workspaceId).toBe("w1");
    expect(sent[0].refused.map((r) => [r.origin, r.count])).toEqual([
      ["https://a.test", 2],
      ["https://b.test", 1],
    ]);
    await log.flush();
    expect(sent).toHaveLength(2);
  });

  it("keeps the 10 most recent origins of a workspace, each cut to 200 characters", async () => {
    const { broker, sent } = recorder();
    const log = new RefusedOrigins(broker, 60_000, now);
    for (let i = 0; i < 15; i++) log.note(asWorkspaceId("w1"), `https://site${i}.test`);
    log.note(asWorkspaceId("w1"), "https://site6.test");
    log.note(asWorkspaceId("w1"), `https://${"x".repeat(500)}`);
    await log.flush();
    const origins = sent[0].refused.map((r) => r.origin);
    expect(origins).toHaveLength(10);
    expect(origins).toContain("https://site6.test");
    expect(origins).not.toContain("https://site5.test");
    expect(origins[origins.length - 1]).toHaveLength(200);
  });
});
