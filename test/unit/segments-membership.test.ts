import { affectedLevels, dependencyLevels } from "../../services/segments/membership";
import type { DynamicSegment } from "../../services/segments/membership.repo";

const seg = (id: string, extra: Partial<DynamicSegment> = {}): DynamicSegment => ({
  id,
  filter: { match: "all", conditions: [] },
  dependsOn: [],
  eventTypes: [],
  usesScore: false,
  ...extra,
});
const ids = (levels: DynamicSegment[][]) => levels.map((l) => l.map((s) => s.id));

describe("affectedLevels", () => {
  const all = [
    seg("dependsOnScore", { dependsOn: ["score"] }),
    seg("score", { usesScore: true }),
    seg("purchase", { eventTypes: ["purchase"] }),
    seg("plain"),
    seg("chain", { dependsOn: ["dependsOnScore", "plain"] }),
  ];

  test("a contact change affects every segment, in dependency levels", () => {
    expect(ids(affectedLevels(all, { kind: "contact" }))).toEqual([
      ["score", "purchase", "plain"],
      ["dependsOnScore"],
      ["chain"],
    ]);
  });
  test("an event affects segments using its type, and their dependents", () => {
    expect(ids(affectedLevels(all, { kind: "event", eventType: "purchase" }))).toEqual([["purchase"]]);
    expect(ids(affectedLevels(all, { kind: "event", eventType: "signup" }))).toEqual([]);
    expect(ids(affectedLevels(all, { kind: "event" }))).toEqual([["purchase"]]);
  });
  test("a score change affects score segments and their dependents transitively", () => {
    expect(ids(affectedLevels(all, { kind: "score" }))).toEqual([["score"], ["dependsOnScore"], ["chain"]]);
  });
  test("a cycle is refused", () => {
    expect(() => dependencyLevels([seg("a", { dependsOn: ["b"] }), seg("b", { dependsOn: ["a"] })])).toThrow(
      /cycle/,
    );
  });
});
