import { decide, dryRun, waitEnd, type Probe } from "../../services/campaigns/interpreter";
import { transitionProblem } from "../../services/campaigns/lifecycle";
import { autoWinner, twoProportionTest } from "../../services/campaigns/significance";
import { derivedMessageId } from "../../services/campaigns/runner";
import { contactChangeMatches, triggerConfigIssues, triggerMatches } from "../../services/campaigns/triggers";
import {
  durationMs,
  insertAction,
  pathEnd,
  removeAction,
  validateWorkflow,
  type Workflow,
} from "../../services/campaigns/workflow";

const entry = { id: "entry", type: "entry" as const, config: {} };
const wf = (nodes: Workflow["nodes"], edges: Workflow["edges"]): Workflow => ({
  nodes: [entry, ...nodes],
  edges,
});

describe("workflow validation", () => {
  it("accepts a branching workflow whose every branch has its edge", () => {
    const valid = wf(
      [
        { id: "w", type: "wait", config: { event: { type: "purchase" }, timeout: "P2D" } },
        {
          id: "s",
          type: "random_split",
          config: {
            branches: [
              { id: "a", weight: 30 },
              { id: "b", weight: 70 },
            ],
          },
        },
        { id: "x", type: "exit", config: {} },
        { id: "g", type: "goal", config: { event: "purchase" } },
      ],
      [
        { from: "entry", to: "w" },
        { from: "w", to: "s", branch: "event" },
        { from: "w", to: "x", branch: "timeout" },
        { from: "s", to: "x", branch: "a" },
      ],
    );
    expect(validateWorkflow(valid)).toEqual([{ field: "nodes[2]", message: "needs an edge for branch b" }]);
    valid.edges.push({ from: "s", to: "x", branch: "b" });
    expect(validateWorkflow(valid)).toEqual([]);
  });

  it("names the path of every problem", () => {
    expect(
      validateWorkflow({
        nodes: [
          entry,
          { id: "a", type: "wait", config: { duration: "P0D" } },
          { id: "a", type: "exit", config: {} },
          { id: "bad id", type: "exit", config: {} },
          { id: "t", type: "teleport", config: {} },
          {
            id: "s",
            type: "ab_split",
            config: {
              variants: [
                { id: "A", weight: 50 },
                { id: "B", weight: 40 },
              ],
              metric: "open",
            },
          },
          { id: "u", type: "update_contact", config: { set: { shoeSize: 42 } } },
          { id: "h", type: "webhook", config: { url: "ftp://example.com" } },
        ],
        edges: [],
      }).map((i) => i.field),
    ).toEqual([
      "nodes[1].config.duration",
      "nodes[2].id",
      "nodes[3].id",
      "nodes[4].type",
      "nodes[5].config.variants",
      "nodes[6].config.set.shoeSize",
      "nodes[7].config.url",
    ]);
    expect(validateWorkflow({ nodes: [entry, { ...entry, id: "e2" }], edges: [] })[0]).toEqual({
      field: "nodes",
      message: "must have exactly one entry node",
    });
  });

  it("refuses edges into the entry, out of an exit, two plain edges out, unreachable nodes and cycles", () => {
    const x = { id: "x", type: "exit" as const, config: {} };
    const w = (id: string) => ({ id, type: "wait" as const, config: { duration: "P1D" } });
    expect(validateWorkflow(wf([w("a")], [{ from: "a", to: "entry" }]))[0].field).toBe("edges[0].to");
    expect(
      validateWorkflow(
        wf(
          [x, w("a")],
          [
            { from: "entry", to: "x" },
            { from: "x", to: "a" },
          ],
        ),
      )[0],
    ).toEqual({
      field: "edges[1]",
      message: "exit nodes have no way out",
    });
    expect(
      validateWorkflow(
        wf(
          [w("a"), w("b")],
          [
            { from: "entry", to: "a" },
            { from: "entry", to: "b" },
          ],
        ),
      )[0].message,
    ).toBe("entry already has an edge out");
    expect(validateWorkflow(wf([w("a")], []))).toEqual([
      { field: "nodes[1]", message: "is not reachable from the entry (a)" },
    ]);
    expect(
      validateWorkflow(
        wf(
          [w("a"), w("b")],
          [
            { from: "entry", to: "a" },
            { from: "a", to: "b" },
            { from: "b", to: "a" },
          ],
        ),
      ),
    ).toEqual([{ field: "edges", message: "must not form a cycle (through a)" }]);
  });

  it("reads ISO 8601 durations", () => {
    expect(durationMs("P2D")).toBe(2 * 86_400_000);
    expect(durationMs("PT1H30M")).toBe(5_400_000);
    expect(durationMs("2 days")).toBeNull();
    expect(durationMs("PT0S")).toBeNull();
  });

  it("inserts after a node, taking over its way out, and removes joining the path", () => {
    const w = (id: string) => ({ id, type: "wait" as const, config: { duration: "P1D" } });
    const base = wf(
      [w("a"), w("b")],
      [
        { from: "entry", to: "a" },
        { from: "a", to: "b" },
      ],
    );
    expect(pathEnd(base)).toBe("b");
    const inserted = insertAction(base, w("n"), "a", null);
    expect(inserted.edges).toEqual([
      { from: "entry", to: "a" },
      { from: "a", to: "n" },
      { from: "n", to: "b" },
    ]);
    expect(removeAction(inserted, "n").edges).toEqual([
      { from: "entry", to: "a" },
      { from: "a", to: "b" },
    ]);
  });
});

describe("interpreter", () => {
  const probe: Probe = { matches: async () => true, engaged: async () => false, winner: async () => null };
  const at = {
    campaignId: "c1",
    enrollmentId: "e1",
    contactId: "k1",
    resumed: false,
    resumeBranch: null,
    now: new Date("2026-01-01T00:00:00Z"),
  };

  it("waits, then resumes by the event's branch or the timeout", async () => {
    const node = { id: "w", type: "wait" as const, config: { event: { type: "paid" }, timeout: "PT2H" } };
    expect(await decide(node, at, probe)).toMatchObject({
      kind: "wait",
      waitingEvent: "paid",
      until: new Date("2026-01-01T02:00:00Z"),
    });
    expect(await decide(node, { ...at, resumed: true, resumeBranch: "event" }, probe)).toMatchObject({
      branch: "event",
    });
    expect(await decide(node, { ...at, resumed: true }, probe)).toMatchObject({ branch: "timeout" });
    expect(waitEnd({ id: "u", type: "wait", config: { until: "2025-01-01T00:00:00Z" } }, at.now)).toEqual(
      at.now,
    );
  });

  it("splits deterministically and lets a decided winner take later contacts", async () => {
    const split = {
      id: "s",
      type: "ab_split" as const,
      config: {
        variants: [
          { id: "A", weight: 50 },
          { id: "B", weight: 50 },
        ],
        metric: "open",
      },
    };
    const first = await decide(split, at, probe);
    expect(await decide(split, at, probe)).toEqual(first);
    expect(await decide(split, at, { ...probe, winner: async () => "B" })).toMatchObject({
      branch: "B",
      reason: "winner B",
    });
  });

  it("dry-runs waits as passing and message conditions as no", async () => {
    const path = await dryRun(
      wf(
        [
          { id: "w", type: "wait", config: { duration: "P1D" } },
          { id: "c", type: "condition", config: { messageOpened: { nodeId: "w" } } },
          { id: "x", type: "exit", config: {} },
        ],
        [
          { from: "entry", to: "w" },
          { from: "w", to: "c" },
          { from: "c", to: "x", branch: "no" },
          { from: "c", to: "x", branch: "yes" },
        ],
      ),
      { campaignId: "c1", enrollmentId: "e1", contactId: "k1", now: at.now },
      { matches: async () => true, winner: async () => null },
    );
    expect(path.map((p) => [p.nodeId, p.branch])).toEqual([
      ["entry", null],
      ["w", null],
      ["c", "no"],
      ["x", null],
    ]);
  });
});

describe("lifecycle, triggers and step ids", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  it("allows the contract's moves only", () => {
    expect(transitionProblem("draft", "active", null, now)).toBeNull();
    expect(transitionProblem("active", "draft", null, now)).toBe(
      "A campaign that is active cannot become draft",
    );
    expect(transitionProblem("archived", "draft", null, now)).not.toBeNull();
    expect(transitionProblem("draft", "scheduled", new Date("2025-12-31T00:00:00Z"), now)).not.toBeNull();
    expect(transitionProblem("draft", "scheduled", new Date("2026-02-01T00:00:00Z"), now)).toBeNull();
    expect(transitionProblem("paused", "completed", null, now)).toBeNull();
  });

  it("checks trigger configs and matches events", () => {
    expect(triggerConfigIssues("event", {})).toEqual([
      { field: "config.eventType", message: "must have required property 'eventType'" },
    ]);
    expect(triggerConfigIssues("segment_entered", { segmentId: "s" })).toEqual([]);
    expect(triggerConfigIssues("date_anniversary", { field: "attributes.birthday" })[0].field).toBe(
      "config.time",
    );
    expect(triggerConfigIssues("date_anniversary", { field: "email", time: "09:00" })[0].field).toBe(
      "config.field",
    );
    expect(triggerConfigIssues("date_anniversary", { field: "createdAt", time: "09:00" })).toEqual([]);
    expect(triggerMatches({ type: "event", config: { eventType: "a" } }, { type: "a" })).toBe(true);
    expect(
      triggerMatches(
        { type: "form_submitted", config: { formId: "f1" } },
        { type: "form.submitted", metadata: { formId: "f2" } },
      ),
    ).toBe(false);
  });

  it("matches a contact change to the fields a contact_updated trigger watches", () => {
    expect(
      triggerConfigIssues("contact_updated", { fields: ["customFields", "consent.sms", "tags"] }),
    ).toEqual([]);
    expect(triggerConfigIssues("contact_updated", { fields: ["consent.fax"] })).toEqual([
      { field: "config.fields[0]", message: "consent.fax is not a field of a contact" },
    ]);
    expect(contactChangeMatches(undefined, ["firstName"])).toBe(true);
    expect(contactChangeMatches(["customFields"], ["customFields.plan"])).toBe(true);
    expect(contactChangeMatches(["customFields.plan.tier"], ["customFields.plan"])).toBe(true);
    expect(contactChangeMatches(["customFields.plan"], ["customFields.planned"])).toBe(false);
    expect(contactChangeMatches(["email"], ["firstName", "tags"])).toBe(false);
    expect(contactChangeMatches(["email"], [])).toBe(false);
    expect(contactChangeMatches(["email"], undefined)).toBe(true);
  });

  it("gives a step's send the same UUID-shaped id every time", () => {
    expect(derivedMessageId("e1", "n1")).toBe(derivedMessageId("e1", "n1"));
    expect(derivedMessageId("e1", "n1")).not.toBe(derivedMessageId("e1", "n2"));
    expect(derivedMessageId("e1", "n1")).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });
});

describe("A/B significance", () => {
  it("runs a two-sided two-proportion z-test of the leader against the runner-up", () => {
    const test = twoProportionTest([
      { id: "B", trials: 1000, successes: 150 },
      { id: "A", trials: 1000, successes: 200 },
      { id: "C", trials: 1000, successes: 100 },
    ]);
    expect(test).toMatchObject({ method: "two-proportion z-test", leader: "A", runnerUp: "B" });
    expect(test.z).toBeCloseTo(2.942, 2);
    expect(test.pValue).toBeCloseTo(0.0033, 3);
    expect(
      twoProportionTest([
        { id: "A", trials: 0, successes: 0 },
        { id: "B", trials: 0, successes: 0 },
      ]).pValue,
    ).toBeNull();
  });

  it("names a winner only past the minimum sample and the confidence", () => {
    const rule = { minSample: 100, confidence: 0.95 };
    expect(
      autoWinner(
        [
          { id: "A", trials: 99, successes: 90 },
          { id: "B", trials: 100, successes: 10 },
        ],
        rule,
      ),
    ).toBeNull();
    expect(
      autoWinner(
        [
          { id: "A", trials: 100, successes: 52 },
          { id: "B", trials: 100, successes: 48 },
        ],
        rule,
      ),
    ).toBeNull();
    expect(
      autoWinner(
        [
          { id: "A", trials: 100, successes: 40 },
          { id: "B", trials: 100, successes: 10 },
        ],
        rule,
      ),
    ).toBe("A");
  });
});

describe("the interpreter at every node type (clock injected)", () => {
  const now = new Date("2026-03-01T12:00:00Z");
  const at = {
    campaignId: "c1",
    enrollmentId: "e1",
    contactId: "k1",
    resumed: false,
    resumeBranch: null,
    now,
  };
  const probe = (over: Partial<Probe> = {}): Probe => ({
    matches: async () => false,
    engaged: async () => false,
    winner: async () => null,
    ...over,
  });
  const node = (type: string, config: Record<string, unknown> = {}) => ({ id: "n", type, config }) as never;

  it("acts at entry and every action node", async () => {
    for (const type of [
      "entry",
      "send",
      "update_contact",
      "segment_add",
      "segment_remove",
      "enroll_campaign",
      "webhook",
      "create_task",
      "notify_member",
    ])
      expect((await decide(node(type), at, probe())).kind).toBe("act");
  });

  it("waits by duration and until, from the injected clock", async () => {
    expect(await decide(node("wait", { duration: "P2D" }), at, probe())).toMatchObject({
      kind: "wait",
      until: new Date("2026-03-03T12:00:00Z"),
      waitingEvent: null,
    });
    expect(await decide(node("wait", { until: "2026-04-01T00:00:00Z" }), at, probe())).toMatchObject({
      until: new Date("2026-04-01T00:00:00Z"),
    });
    expect(await decide(node("wait", { duration: "P2D" }), { ...at, resumed: true }, probe())).toMatchObject({
      kind: "act",
    });
  });

  it("branches conditions on a filter, an open and a click (on a url)", async () => {
    const asked: unknown[] = [];
    const p = probe({
      matches: async () => true,
      engaged: async (nodeId, kind, url) => {
        asked.push([nodeId, kind, url]);
        return kind === "clicked";
      },
    });
    expect(await decide(node("condition", { filter: {} }), at, p)).toMatchObject({ branch: "yes" });
    expect(await decide(node("condition", { messageOpened: { nodeId: "s1" } }), at, p)).toMatchObject({
      branch: "no",
    });
    expect(
      await decide(node("condition", { messageClicked: { nodeId: "s1", url: "https://x.test" } }), at, p),
    ).toMatchObject({ branch: "yes" });
    expect(asked).toEqual([
      ["s1", "opened", undefined],
      ["s1", "clicked", "https://x.test"],
    ]);
  });

  it("ends at goals (completed) and exits (exited)", async () => {
    expect(await decide(node("goal", { event: "purchase" }), at, probe())).toMatchObject({
      kind: "end",
      status: "completed",
    });
    expect(await decide(node("exit"), at, probe())).toMatchObject({ kind: "end", status: "exited" });
  });

  it("splits at random by the enrollment, the same on every try", async () => {
    const split = node("random_split", {
      branches: [
        { id: "l", weight: 50 },
        { id: "r", weight: 50 },
      ],
    });
    const once = await decide(split, at, probe());
    expect(await decide(split, at, probe())).toEqual(once);
    expect(["l", "r"]).toContain((once as { branch: string }).branch);
  });
});
