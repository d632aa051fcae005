import { firstUsable } from "../../services/messages/providers";
import type { OpenedProvider } from "../../services/providers/for-send";

const provider = (
  id: string,
  status: "active" | "failing",
  probeAt: string | null = null,
): OpenedProvider => ({
  id,
  type: "emailapi1",
  name: id,
  isDefault: id === "a",
  priority: 0,
  status,
  probeAt: probeAt === null ? null : new Date(probeAt),
  config: {},
  updatedAt: new Date(0),
});

describe("failover: the provider a send goes through", () => {
  const now = Date.parse("2026-11-25T12:00:00Z");
  it("is the first active one in the channel's order", () => {
    expect(firstUsable([provider("a", "active"), provider("b", "active")], now).id).toBe("a");
    expect(
      firstUsable([provider("a", "failing", "2026-11-25T12:01:00Z"), provider("b", "active")], now).id,
    ).toBe("b");
  });
  it("is a failing one whose probe is due", () => {
    expect(
      firstUsable([provider("a", "failing", "2026-11-25T11:59:59Z"), provider("b", "active")], now).id,
    ).toBe("a");
  });
  it("is the default when every one is failing", () => {
    const all = [
      provider("a", "failing", "2026-11-25T12:05:00Z"),
      provider("b", "failing", "2026-11-25T12:01:00Z"),
    ];
    expect(firstUsable(all, now).id).toBe("a");
  });
});
