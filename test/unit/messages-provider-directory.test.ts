import type { LoggerInstance } from "moleculer";
import { ProviderDirectory } from "../../services/messages/providers";
import type { OpenedProvider } from "../../services/providers/for-send";
import { asWorkspaceId } from "../../lib/tenancy";

/** The sender's copy of its providers: read once, dropped on a change, read again when it cannot be right. */

const logger = { info: () => undefined } as unknown as LoggerInstance;

const provider = (id: string, status: "active" | "failing" = "active"): OpenedProvider => ({
  id,
  type: "emailapi1",
  name: id,
  isDefault: id === "a",
  priority: 0,
  status,
  probeAt: null,
  config: { apiKey: `key-${id}`, baseUrl: "http://127.0.0.1:9" },
  updatedAt: new Date(0),
});

function directory(rows: () => OpenedProvider[]) {
  const reads: string[] = [];
  const providers = new ProviderDirectory(logger, async (workspaceId, channel) => {
    reads.push(`${workspaceId}:${channel}`);
    return rows();
  });
  return { providers, reads };
}

describe("the sender's providers", () => {
  it("are read once per workspace and channel, until the workspace's providers change", async () => {
    let rows = [provider("a")];
    const { providers, reads } = directory(() => rows);
    expect((await providers.clientFor(asWorkspaceId("w1"), "email", null)).id).toBe("a");
    expect((await providers.clientFor(asWorkspaceId("w1"), "email", null)).id).toBe("a");
    expect(reads).toEqual(["w1:email"]);
    rows = [provider("b")];
    providers.forget(asWorkspaceId("w1"));
    expect((await providers.clientFor(asWorkspaceId("w1"), "email", null)).id).toBe("b");
    expect(reads).toEqual(["w1:email", "w1:email"]);
    await providers.close();
  });

  it("are read again for a named provider the copy lacks; one still missing fails the send for good", async () => {
    let rows = [provider("a")];
    const { providers, reads } = directory(() => rows);
    await providers.clientFor(asWorkspaceId("w1"), "email", null);
    rows = [provider("a"), provider("new")];
    expect((await providers.clientFor(asWorkspaceId("w1"), "email", "new")).id).toBe("new");
    expect(reads).toHaveLength(2);
    await expect(providers.clientFor(asWorkspaceId("w1"), "email", "gone")).rejects.toMatchObject({
      message: "Provider gone no longer exists",
      transient: false,
    });
    await providers.close();
  });

  it("are read again after a health report answers failing or a switch, kept after an unchanged active one", async () => {
    let rows = [provider("a"), provider("b")];
    const { providers, reads } = directory(() => rows);
    await providers.clientFor(asWorkspaceId("w1"), "email", null);
    providers.healthReported(asWorkspaceId("w1"), "a", "active");
    await providers.clientFor(asWorkspaceId("w1"), "email", null);
    expect(reads).toHaveLength(1);
    providers.healthReported(asWorkspaceId("w1"), "a", "failing");
    rows = [provider("a", "failing"), provider("b")];
    expect((await providers.clientFor(asWorkspaceId("w1"), "email", null)).id).toBe("b");
    expect(reads).toHaveLength(2);
    providers.healthReported(asWorkspaceId("w1"), "a", "active");
    rows = [provider("a"), provider("b")];
    expect((await providers.clientFor(asWorkspaceId("w1"), "email", null)).id).toBe("a");
    expect(reads).toHaveLength(3);
    await providers.close();
  });

  it("without a provider, or off email and SMS, are the log client", async () => {
    const { providers } = directory(() => []);
    expect((await providers.clientFor(asWorkspaceId("w1"), "sms", null)).type).toBe("log");
    expect((await providers.clientFor(asWorkspaceId("w1"), "push", null)).type).toBe("log");
    await providers.close();
  });
});
