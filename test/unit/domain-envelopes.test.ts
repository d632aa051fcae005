import { factsOf, failedFactIdsOf, handleFacts, type DomainEvent } from "../../lib/domain-events";
import { asWorkspaceId } from "../../lib/tenancy";

const fact = (id: string, contactId?: string): DomainEvent => ({
  id,
  workspaceId: asWorkspaceId("ws"),
  type: "contact.updated",
  data: contactId ? { contactId } : {},
  occurredAt: "2026-11-27T00:00:00.000Z",
});

describe("factsOf", () => {
  it("reads an envelope's facts, and a lone fact as sent before envelopes", () => {
    const one = fact("a");
    expect(factsOf({ facts: [one, fact("b")] }).map((f) => f.id)).toEqual(["a", "b"]);
    expect(factsOf(one)).toEqual([one]);
  });
});

describe("handleFacts", () => {
  it("handles every fact though some fail, then fails naming only those", async () => {
    const handled: string[] = [];
    const err = await handleFacts(
      ["a", "b", "c", "d"].map((id) => fact(id)),
      async ({ id }) => {
        if (id === "b" || id === "d") throw new Error(`no ${id}`);
        handled.push(id);
      },
      { concurrency: 2 },
    ).catch((e: unknown) => e);
    expect(handled.sort()).toEqual(["a", "c"]);
    expect(failedFactIdsOf(err)?.sort()).toEqual(["b", "d"]);
    expect((err as Error).message).toMatch(/2 facts .* no [bd]/);
  });

  it("keeps one key's facts in staging order, one at a time, beside other keys'", async () => {
    const log: string[] = [];
    const running = new Set<string>();
    let overlapped = false;
    await handleFacts(
      [fact("1", "x"), fact("2", "y"), fact("3", "x"), fact("4"), fact("5", "x")],
      async (f) => {
        const key = (f.data.contactId as string) ?? f.id;
        if (running.has(key)) overlapped = true;
        running.add(key);
        log.push(`start ${f.id}`);
        await new Promise((r) => setImmediate(r));
        running.delete(key);
      },
      { concurrency: 3, keyOf: (f) => f.data.contactId as string | undefined },
    );
    expect(overlapped).toBe(false);
    const starts = log.map((l) => l.slice(6));
    expect(starts.filter((id) => ["1", "3", "5"].includes(id))).toEqual(["1", "3", "5"]);
    // Three chains at once: x's first, y's and the keyless fact start before x's second.
    expect(starts.slice(0, 3).sort()).toEqual(["1", "2", "4"]);
  });

  it("settles at once for an empty envelope", async () => {
    await expect(handleFacts([], async () => undefined, { concurrency: 4 })).resolves.toBeUndefined();
  });
});
