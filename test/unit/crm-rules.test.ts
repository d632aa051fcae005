import type { PipelineStage } from "../../models";
import { likeEscape } from "../../lib/database";
import {
  buildStages,
  closedAtAfterMove,
  DEFAULT_STAGES,
  dueNotificationKey,
  mergeObject,
  normaliseDomain,
  searchTypes,
  statusOfStage,
  summariseDeals,
} from "../../services/crm/crm.rules";

describe("normaliseDomain", () => {
  test.each([
    ["acme.com", "acme.com"],
    ["  ACME.com ", "acme.com"],
    ["https://www.acme.com/about?x=1", "acme.com"],
    ["http://shop.acme.co.uk:8080", "shop.acme.co.uk"],
    ["acme.com.", "acme.com"],
    ["xn--bcher-kva.example", "xn--bcher-kva.example"],
    ["münchen", null],
    ["localhost", null],
    ["not a domain", null],
    ["-acme.com", null],
    ["acme..com", null],
    ["", null],
  ])("%s → %s", (input, expected) => {
    expect(normaliseDomain(input)).toBe(expected);
  });
});

test("likeEscape makes %, _ and \\ literal", () => {
  expect(likeEscape("50%_off\\")).toBe("50\\%\\_off\\\\");
});

describe("buildStages", () => {
  let n = 0;
  const makeId = () => `s${++n}`;

  test("new stages get ids, default probabilities follow the flags", () => {
    const { stages, removedIds } = buildStages(DEFAULT_STAGES, [], makeId);
    expect(removedIds).toEqual([]);
    expect(stages).toHaveLength(6);
    expect(new Set(stages.map((s) => s.id)).size).toBe(6);
    expect(
      buildStages([{ name: "W", won: true }, { name: "L", lost: true }, { name: "O" }], [], makeId).stages,
    ).toEqual([
      { id: expect.any(String), name: "W", probability: 100, won: true, lost: false },
      { id: expect.any(String), name: "L", probability: 0, won: false, lost: true },
      { id: expect.any(String), name: "O", probability: null, won: false, lost: false },
    ]);
  });

  test("existing ids are kept, reordered, and left-out ones reported", () => {
    const existing: PipelineStage[] = [
      { id: "a", name: "A", probability: 10, won: false, lost: false },
      { id: "b", name: "B", probability: 20, won: false, lost: false },
      { id: "c", name: "C", probability: 30, won: false, lost: false },
    ];
    const { stages, removedIds } = buildStages(
      [{ id: "c", name: "C2" }, { id: "a", name: "A", probability: 15 }, { name: "New" }],
      existing,
      makeId,
    );
    expect(stages.map((s) => [s.id, s.name, s.probability])).toEqual([
      ["c", "C2", null],
      ["a", "A", 15],
      [expect.any(String), "New", null],
    ]);
    expect(removedIds).toEqual(["b"]);
  });

  test.each([
    [[], "stages"],
    [[{ name: "A" }, { name: " a " }], "stages[1].name"],
    [[{ name: "A", won: true, lost: true }], "stages[0].won"],
    [[{ name: "A", id: "ghost" }], "stages[0].id"],
    [[{ name: "   " }], "stages[0].name"],
  ])("rejects %j naming %s", (input, field) => {
    try {
      buildStages(input, [], makeId);
      throw new Error("expected a validation error");
    } catch (err) {
      const e = err as { type: string; data: { details: Array<{ field: string }> } };
      expect(e.type).toBe("VALIDATION_ERROR");
      expect(e.data.details.map((d) => d.field)).toContain(field);
    }
  });

  test("a repeated id is rejected", () => {
    const existing: PipelineStage[] = [{ id: "a", name: "A", probability: null, won: false, lost: false }];
    expect(() =>
      buildStages(
        [
          { id: "a", name: "A" },
          { id: "a", name: "B" },
        ],
        existing,
        makeId,
      ),
    ).toThrow("stages[1].id appears twice");
  });

  test("more than 50 stages is refused", () => {
    const many = Array.from({ length: 51 }, (_, i) => ({ name: `S${i}` }));
    expect(() => buildStages(many, [], makeId)).toThrow("at most 50");
  });
});

test("status of a stage and closedAt after a move", () => {
  expect(statusOfStage({ won: true, lost: false })).toBe("won");
  expect(statusOfStage({ won: false, lost: true })).toBe("lost");
  expect(statusOfStage({ won: false, lost: false })).toBe("open");
  const now = new Date("2026-01-02T00:00:00Z");
  const before = new Date("2026-01-01T00:00:00Z");
  expect(closedAtAfterMove("open", "won", null, now)).toBe(now);
  expect(closedAtAfterMove("won", "lost", before, now)).toBe(now);
  expect(closedAtAfterMove("won", "won", before, now)).toBe(before);
  expect(closedAtAfterMove("lost", "open", before, now)).toBeNull();
});

test("mergeObject merges key by key and removes null keys", () => {
  expect(mergeObject({ a: 1, b: 2 }, { b: null, c: { d: 1 } })).toEqual({ a: 1, c: { d: 1 } });
});

test("the due notification key differs per due date and assignee", () => {
  const at = new Date("2026-03-01T10:00:00Z");
  expect(dueNotificationKey("t1", at, "u1")).toBe("task.due:t1:2026-03-01T10:00:00.000Z:u1");
  expect(dueNotificationKey("t1", new Date(at.getTime() + 1), "u1")).not.toBe(
    dueNotificationKey("t1", at, "u1"),
  );
});

test("summariseDeals lists every stage, sums per currency and computes the win rate", () => {
  const stages: PipelineStage[] = [
    { id: "new", name: "New", probability: 20, won: false, lost: false },
    { id: "won", name: "Won", probability: 100, won: true, lost: false },
    { id: "lost", name: "Lost", probability: 0, won: false, lost: true },
  ];
  const result = summariseDeals(
    [
      { id: "p", name: "P", isDefault: true, stages },
      { id: "q", name: "Q", isDefault: false, stages: [stages[0]] },
    ],
    [
      { pipelineId: "p", stageId: "new", status: "open", currency: "USD", count: 2, value: "100.10" },
      { pipelineId: "p", stageId: "new", status: "open", currency: "EUR", count: 1, value: "50" },
      { pipelineId: "p", stageId: "won", status: "won", currency: "USD", count: 3, value: "0.20" },
      { pipelineId: "p", stageId: "won", status: "won", currency: "USD", count: 0, value: "0.10" },
      { pipelineId: "p", stageId: "lost", status: "lost", currency: "USD", count: 1, value: "5" },
    ],
  );
  expect(
    result.pipelines[0].stages.map((s) => [s.id, s.count, s.value, s.weightedValue, s.position]),
  ).toEqual([
    ["new", 3, { USD: 100.1, EUR: 50 }, { USD: 20.02, EUR: 10 }, 0],
    ["won", 3, { USD: 0.3 }, { USD: 0.3 }, 1],
    ["lost", 1, { USD: 5 }, { USD: 0 }, 2],
  ]);
  expect(result.pipelines[1].stages[0]).toMatchObject({ count: 0, value: {}, weightedValue: {} });
  expect(result.totals).toEqual({
    open: { count: 3, value: { USD: 100.1, EUR: 50 } },
    won: { count: 3, value: { USD: 0.3 } },
    lost: { count: 1, value: { USD: 5 } },
    all: { count: 7 },
  });
  expect(result.winRate).toBe(0.75);
  expect(summariseDeals([], []).winRate).toBeNull();
});

describe("searchTypes", () => {
  test("every type when none is asked; the asked ones, once each; an unknown or empty list names `types`", () => {
    expect(searchTypes(undefined)).toEqual([
      "contact",
      "company",
      "deal",
      "campaign",
      "template",
      "segment",
      "form",
    ]);
    expect(searchTypes(" deal, contact,deal ")).toEqual(["deal", "contact"]);
    for (const types of ["contacts", "deal,planet", ","]) {
      let err: unknown;
      try {
        searchTypes(types);
      } catch (e) {
        err = e;
      }
      expect((err as { data: { details: Array<{ field: string }> } }).data.details[0].field).toBe("types");
    }
  });
});
