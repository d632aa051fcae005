import { VersionedCache } from "../../lib/versioned-cache";
import { asWorkspaceId } from "../../lib/tenancy";

function harness() {
  const versions = new Map<string, string>();
  const probes: string[][] = [];
  const loads: string[] = [];
  const held: Array<() => void> = [];
  let holdProbes = false;
  const cache = new VersionedCache<string>(
    async (ids) => {
      probes.push(ids);
      // The versions are read when the probe starts, as a statement's snapshot would be.
      const seen = new Map(ids.map((id) => [id, versions.get(id) ?? ""]));
      if (holdProbes) await new Promise<void>((r) => held.push(r));
      return seen;
    },
    async (ws) => {
      loads.push(ws);
      return `${ws}@${versions.get(ws) ?? ""}`;
    },
    { area: "things" },
  );
  return {
    cache,
    versions,
    probes,
    loads,
    hold: () => (holdProbes = true),
    release: () => {
      holdProbes = false;
      held.splice(0).forEach((r) => r());
    },
  };
}

describe("VersionedCache", () => {
  it("loads once per version and reloads when the version moves", async () => {
    const h = harness();
    h.versions.set("w1", "1");
    expect(await h.cache.get(asWorkspaceId("w1"))).toBe("w1@1");
    expect(await h.cache.get(asWorkspaceId("w1"))).toBe("w1@1");
    expect(h.loads).toEqual(["w1"]);
    h.versions.set("w1", "2");
    expect(await h.cache.get(asWorkspaceId("w1"))).toBe("w1@2");
    expect(h.loads).toEqual(["w1", "w1"]);
  });

  it("shares one probe among reads that arrive while probes run, never an older one", async () => {
    const h = harness();
    h.versions.set("w1", "1");
    h.versions.set("w2", "1");
    h.hold();
    const first = h.cache.get(asWorkspaceId("w1"));
    await new Promise((r) => setImmediate(r));
    // The probe's one lane is busy; these four wait and go in one probe that starts after the change below.
    const second = h.cache.get(asWorkspaceId("w2"));
    const waiting = [
      h.cache.get(asWorkspaceId("w1")),
      h.cache.get(asWorkspaceId("w2")),
      h.cache.get(asWorkspaceId("w1")),
    ];
    h.versions.set("w1", "2");
    h.release();
    await Promise.all([first, second]);
    expect(await Promise.all(waiting)).toEqual(["w1@2", "w2@1", "w1@2"]);
    expect(h.probes).toEqual([["w1"], ["w2", "w1"]]);
    // w1 was loaded for version 1, then again because the shared probe saw version 2; w2 once.
    expect(h.loads).toEqual(["w1", "w2", "w1"]);
  });

  it("does not keep a failed load", async () => {
    let fail = true;
    const cache = new VersionedCache<number>(
      async (ids) => new Map(ids.map((id) => [id, "v"])),
      async () => {
        if (fail) throw new Error("boom");
        return 7;
      },
    );
    await expect(cache.get(asWorkspaceId("w"))).rejects.toThrow("boom");
    fail = false;
    expect(await cache.get(asWorkspaceId("w"))).toBe(7);
  });

  it("takes a version the caller probed already, and probes for an area the caller did not", async () => {
    const h = harness();
    h.versions.set("w1", "1");
    expect(await h.cache.get(asWorkspaceId("w1"), { things: "1" })).toBe("w1@1");
    expect(h.probes).toEqual([]);
    // A newer known version reloads without a probe; an empty one means the workspace has no rows.
    h.versions.set("w1", "2");
    expect(await h.cache.get(asWorkspaceId("w1"), { things: "2" })).toBe("w1@2");
    expect(await h.cache.get(asWorkspaceId("w1"), { things: "2" })).toBe("w1@2");
    expect(h.loads).toEqual(["w1", "w1"]);
    expect(h.probes).toEqual([]);
    expect(await h.cache.get(asWorkspaceId("w1"), { others: "9" })).toBe("w1@2");
    expect(h.probes).toEqual([["w1"]]);
  });
});
