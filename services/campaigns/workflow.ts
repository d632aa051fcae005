import { Type, type TSchema } from "@sinclair/typebox";
import { Duration } from "luxon";
import type { FieldIssue } from "../../lib/errors";
import { schemaIssues } from "../../lib/schema";
import { CHANNELS } from "../../lib/channels";
import { writableFieldSchemas } from "../contacts/fields";
import { validateEventWhere, validateFilter } from "../segments/filter-schema";

/**
 * A campaign's workflow (contract 9): nodes with a type and a config, and
 * edges between them, some named for the branch they leave by. Pure: the
 * checks of a save, the branches each node leaves by, and the edits of the
 * `actions` view.
 */

export const NODE_TYPES = [
  "entry",
  "send",
  "wait",
  "condition",
  "ab_split",
  "random_split",
  "update_contact",
  "segment_add",
  "segment_remove",
  "enroll_campaign",
  "webhook",
  "create_task",
  "notify_member",
  "goal",
  "exit",
] as const;
export type NodeType = (typeof NODE_TYPES)[number];

export interface WorkflowNode {
  id: string;
  type: NodeType;
  config: Record<string, unknown>;
}
export interface WorkflowEdge {
  from: string;
  to: string;
  branch?: string | null;
}
export interface Workflow {
  nodes: WorkflowNode[];
  edges: WorkflowEdge[];
}

export const NODE_ID = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_NODES = 200;

/** A new campaign's draft: an entry and nothing else. */
export const emptyWorkflow = (): Workflow => ({
  nodes: [{ id: "entry", type: "entry", config: {} }],
  edges: [],
});

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Closed = <T extends Parameters<typeof Type.Object>[0]>(properties: T) =>
  Type.Object(properties, { additionalProperties: false });
const Weighted = (max: number) =>
  Type.Array(
    Closed({
      id: Type.String({ pattern: NODE_ID.source }),
      weight: Type.Integer({ minimum: 0, maximum: 100 }),
    }),
    {
      minItems: 2,
      maxItems: max,
    },
  );
const Filter = Type.Object({}, { additionalProperties: true, description: "A segment filter" });

/** Each node type's config; `wait` and `condition` take one of several shapes, told apart by their keys. */
const CONFIGS: Record<Exclude<NodeType, "wait" | "condition">, TSchema> = {
  entry: Closed({}),
  send: Closed({
    channel: Type.Union(CHANNELS.map((c) => Type.Literal(c))),
    templateId: Id,
    transactional: Type.Optional(Type.Boolean()),
    variables: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    // When the workspace's frequency cap holds the contact: skip (the message is recorded suppressed) or wait for it.
    onFrequencyCap: Type.Optional(Type.Union([Type.Literal("skip"), Type.Literal("wait")])),
  }),
  ab_split: Closed({
    variants: Weighted(5),
    // The test names the winner itself once every variant has `minSample` contacts and the leader this confidence.
    autoWinner: Type.Optional(
      Closed({
        minSample: Type.Integer({ minimum: 10, maximum: 1_000_000 }),
        confidence: Type.Number({ minimum: 0.8, maximum: 0.999 }),
      }),
    ),
    metric: Type.Union(["open", "click", "goal"].map((m) => Type.Literal(m))),
  }),
  random_split: Closed({ branches: Weighted(10) }),
  update_contact: Closed({
    // The contact's own writable fields, checked as a contact update checks them (tags go by addTags/removeTags).
    set: Type.Optional(
      Type.Object(
        Object.fromEntries(Object.entries(writableFieldSchemas).filter(([name]) => name !== "tags")),
        { additionalProperties: false },
      ),
    ),
    addTags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 })),
    removeTags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 })),
    consent: Type.Optional(
      Type.Record(
        Type.Union(CHANNELS.map((c) => Type.Literal(c))),
        Type.Union(["opted_in", "opted_out"].map((s) => Type.Literal(s))),
      ),
    ),
  }),
  segment_add: Closed({ segmentId: Id }),
  segment_remove: Closed({ segmentId: Id }),
  enroll_campaign: Closed({ campaignId: Id }),
  webhook: Closed({
    url: Type.String({ format: "uri", maxLength: 2048, pattern: "^https?://" }),
    headers: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 1000 }))),
    body: Type.Optional(Type.Unknown()),
  }),
  create_task: Closed({
    title: Type.String({ minLength: 1, maxLength: 500 }),
    dueInDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 3650 })),
    assigneeId: Type.Optional(Id),
  }),
  notify_member: Closed({
    userId: Type.Optional(Id),
    role: Type.Optional(Type.Union(["OWNER", "ADMIN", "MEMBER", "VIEWER"].map((r) => Type.Literal(r)))),
    message: Type.String({ minLength: 1, maxLength: 2000 }),
  }),
  goal: Closed({ event: Type.String({ minLength: 1, maxLength: 200 }) }),
  exit: Closed({}),
};
const WAIT = {
  duration: Closed({ duration: Type.String() }),
  until: Closed({ until: Type.String({ format: "date-time" }) }),
  event: Closed({
    event: Closed({
      type: Type.String({ minLength: 1, maxLength: 200 }),
      where: Type.Optional(Type.Array(Type.Unknown(), { description: "Conditions on the event's fields" })),
    }),
    timeout: Type.String(),
  }),
};
const CONDITION = {
  filter: Closed({ filter: Filter }),
  messageOpened: Closed({ messageOpened: Closed({ nodeId: Id }) }),
  messageClicked: Closed({
    messageClicked: Closed({ nodeId: Id, url: Type.Optional(Type.String({ maxLength: 2048 })) }),
  }),
};

/** An ISO 8601 duration (`P2D`, `PT1H30M`) in milliseconds; null when it is not one or not positive. */
export function durationMs(text: unknown): number | null {
  if (typeof text !== "string") return null;
  const duration = Duration.fromISO(text);
  const ms = duration.isValid ? duration.as("milliseconds") : NaN;
  return Number.isFinite(ms) && ms > 0 ? ms : null;
}

/** The branches a node leaves by; empty for a node with one plain way out. */
export function branchesOf(node: WorkflowNode): string[] {
  const c = node.config;
  switch (node.type) {
    case "wait":
      return "event" in c ? ["event", "timeout"] : [];
    case "condition":
      return ["yes", "no"];
    case "ab_split":
      return ((c.variants as Array<{ id: string }> | undefined) ?? []).map((v) => v.id);
    case "random_split":
      return ((c.branches as Array<{ id: string }> | undefined) ?? []).map((b) => b.id);
    default:
      return [];
  }
}

/** The node an enrollment goes to from `from` (by `branch` when it branches); null at a path's end. */
export function successor(workflow: Workflow, from: string, branch?: string | null): string | null {
  const edge = workflow.edges.find((e) => e.from === from && (branch ? e.branch === branch : !e.branch));
  return edge?.to ?? null;
}

/** A node's config issues, each at its path (`nodes[3].config.duration`). */
function configIssues(node: WorkflowNode, at: string): FieldIssue[] {
  const prefix = (issues: FieldIssue[]) =>
    issues.map((i) => ({ field: i.field ? `${at}.${i.field}` : at, message: i.message }));
  const c = node.config;
  if (typeof c !== "object" || c === null || Array.isArray(c))
    return [{ field: at, message: "must be an object" }];
  const shaped = (shapes: Record<string, TSchema>, what: string) => {
    const key = Object.keys(shapes).find((k) => k in c);
    if (!key) return [{ field: at, message: `must have one of ${Object.keys(shapes).join(", ")} (${what})` }];
    return prefix(schemaIssues(shapes[key] as Record<string, unknown>, c));
  };
  if (node.type === "wait") {
    const issues = shaped(WAIT, "a wait");
    if (issues.length) return issues;
    if ("duration" in c && durationMs(c.duration) === null)
      return [
        { field: `${at}.duration`, message: "must be a positive ISO 8601 duration such as P2D or PT1H" },
      ];
    if ("event" in c && durationMs(c.timeout) === null)
      return [
        { field: `${at}.timeout`, message: "must be a positive ISO 8601 duration such as P2D or PT1H" },
      ];
    const where = (c.event as { where?: unknown } | undefined)?.where;
    if (where !== undefined) return validateEventWhere(where, `${at}.event.where`);
    return [];
  }
  if (node.type === "condition") {
    const issues = shaped(CONDITION, "a condition");
    if (issues.length || !("filter" in c)) return issues;
    return prefix(validateFilter(c.filter, "filter").issues);
  }
  const issues = prefix(schemaIssues(CONFIGS[node.type] as Record<string, unknown>, c));
  if (issues.length) return issues;
  if (node.type === "ab_split" || node.type === "random_split") {
    const list = (node.type === "ab_split" ? c.variants : c.branches) as Array<{
      id: string;
      weight: number;
    }>;
    const key = node.type === "ab_split" ? "variants" : "branches";
    if (list.reduce((sum, v) => sum + v.weight, 0) !== 100)
      return [{ field: `${at}.${key}`, message: "weights must sum to 100" }];
    if (new Set(list.map((v) => v.id)).size !== list.length)
      return [{ field: `${at}.${key}`, message: "ids must be unique" }];
  }
  if (node.type === "notify_member" && !c.userId === !c.role)
    return [{ field: at, message: "must name either userId or role" }];
  return [];
}

/**
 * Every problem of a workflow, each at its path: one entry, unique ids,
 * known node types and valid configs, edges between known nodes, none into
 * the entry, one edge per branch of a branching node and at most one plain
 * edge out of any other (none out of `exit` or `goal`), no cycle, and every
 * node reachable from the entry (goals excepted: they are reached from
 * anywhere by their event). Empty when the workflow is valid.
 */
export function validateWorkflow(input: unknown): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const wf = input as Partial<Workflow> | null;
  if (!wf || typeof wf !== "object") return [{ field: "workflow", message: "must be an object" }];
  if (!Array.isArray(wf.nodes)) return [{ field: "nodes", message: "must be a list" }];
  if (!Array.isArray(wf.edges)) return [{ field: "edges", message: "must be a list" }];
  if (wf.nodes.length > MAX_NODES)
    return [{ field: "nodes", message: `must have at most ${MAX_NODES} nodes` }];
  const byId = new Map<string, WorkflowNode>();
  wf.nodes.forEach((node, i) => {
    const at = `nodes[${i}]`;
    if (!node || typeof node !== "object") return issues.push({ field: at, message: "must be an object" });
    if (typeof node.id !== "string" || !NODE_ID.test(node.id))
      return issues.push({ field: `${at}.id`, message: "must be 1 to 64 letters, digits, _ or -" });
    if (byId.has(node.id)) return issues.push({ field: `${at}.id`, message: `repeats the id ${node.id}` });
    if (!NODE_TYPES.includes(node.type))
      return issues.push({ field: `${at}.type`, message: `must be one of ${NODE_TYPES.join(", ")}` });
    byId.set(node.id, node);
    issues.push(...configIssues(node, `${at}.config`));
  });
  const entries = wf.nodes.filter((n) => n?.type === "entry");
  if (entries.length !== 1) issues.push({ field: "nodes", message: "must have exactly one entry node" });

  const out = new Map<string, WorkflowEdge[]>();
  wf.edges.forEach((edge, i) => {
    const at = `edges[${i}]`;
    if (!edge || typeof edge !== "object") return issues.push({ field: at, message: "must be an object" });
    const from = byId.get(edge.from);
    if (!from) return issues.push({ field: `${at}.from`, message: `names no node (${String(edge.from)})` });
    if (!byId.has(edge.to))
      return issues.push({ field: `${at}.to`, message: `names no node (${String(edge.to)})` });
    if (byId.get(edge.to)!.type === "entry")
      return issues.push({ field: `${at}.to`, message: "no edge may enter the entry" });
    if (from.type === "exit" || from.type === "goal")
      return issues.push({ field: at, message: `${from.type} nodes have no way out` });
    const branches = branchesOf(from);
    if (branches.length && !branches.includes(edge.branch ?? ""))
      return issues.push({
        field: `${at}.branch`,
        message: `must be one of ${branches.join(", ")} (node ${from.id})`,
      });
    if (!branches.length && edge.branch)
      return issues.push({ field: `${at}.branch`, message: `node ${from.id} does not branch` });
    const taken = out.get(from.id) ?? [];
    if (taken.some((e) => (e.branch ?? "") === (edge.branch ?? "")))
      return issues.push({
        field: at,
        message: edge.branch
          ? `branch ${edge.branch} of ${from.id} already has an edge`
          : `${from.id} already has an edge out`,
      });
    out.set(from.id, [...taken, edge]);
  });
  if (issues.length) return issues;

  wf.nodes.forEach((node, i) => {
    const missing = branchesOf(node).filter((b) => !(out.get(node.id) ?? []).some((e) => e.branch === b));
    if (missing.length)
      issues.push({ field: `nodes[${i}]`, message: `needs an edge for branch ${missing.join(", ")}` });
  });

  // Depth-first from the entry: a node met again on the current path closes a cycle.
  const state = new Map<string, "open" | "done">();
  const visit = (id: string): string | null => {
    state.set(id, "open");
    for (const edge of out.get(id) ?? []) {
      const seen = state.get(edge.to);
      if (seen === "open") return edge.to;
      if (!seen) {
        const cycle = visit(edge.to);
        if (cycle) return cycle;
      }
    }
    state.set(id, "done");
    return null;
  };
  const cycleAt = visit(entries[0].id);
  if (cycleAt) issues.push({ field: "edges", message: `must not form a cycle (through ${cycleAt})` });
  wf.nodes.forEach((node, i) => {
    if (!state.has(node.id) && node.type !== "goal")
      issues.push({ field: `nodes[${i}]`, message: `is not reachable from the entry (${node.id})` });
  });
  return issues;
}

/** The node list of the `actions` view: every node but the entry, each with where it leads. */
export function actionsOf(workflow: Workflow) {
  return workflow.nodes
    .filter((n) => n.type !== "entry")
    .map((node) => ({
      id: node.id,
      type: node.type,
      config: node.config,
      next: workflow.edges
        .filter((e) => e.from === node.id)
        .map((e) => ({ to: e.to, branch: e.branch ?? null })),
    }));
}

/**
 * Insert a node after `after` (default: the last node of the main path), on
 * `branch` when `after` branches: it takes over the edge that left there,
 * so the path continues through it.
 */
export function insertAction(
  workflow: Workflow,
  node: WorkflowNode,
  after: string,
  branch: string | null,
): Workflow {
  const edges = workflow.edges.map((e) => ({ ...e }));
  const leaving = edges.find((e) => e.from === after && (e.branch ?? null) === branch);
  const added: WorkflowEdge[] = [{ from: after, to: node.id, ...(branch ? { branch } : {}) }];
  if (leaving) {
    // A new node that branches continues the old path on its first branch.
    const [first] = branchesOf(node);
    added.push({ from: node.id, to: leaving.to, ...(first ? { branch: first } : {}) });
  }
  return {
    nodes: [...workflow.nodes, node],
    edges: [...edges.filter((e) => e !== leaving), ...added],
  };
}

/** The last node of the path that follows the entry by plain edges and first branches. */
export function pathEnd(workflow: Workflow): string {
  let at = workflow.nodes.find((n) => n.type === "entry")!.id;
  for (let steps = 0; steps <= workflow.nodes.length; steps++) {
    const node = workflow.nodes.find((n) => n.id === at)!;
    const next = successor(workflow, at, branchesOf(node)[0] ?? null);
    if (!next) return at;
    at = next;
  }
  return at;
}

/** Remove a node, joining its predecessors to what followed it (its first way out). */
export function removeAction(workflow: Workflow, id: string): Workflow {
  const node = workflow.nodes.find((n) => n.id === id)!;
  const next = successor(workflow, id, branchesOf(node)[0] ?? null);
  const edges: WorkflowEdge[] = [];
  for (const edge of workflow.edges) {
    if (edge.from === id) continue;
    if (edge.to !== id) edges.push(edge);
    else if (next) edges.push({ ...edge, to: next });
  }
  return { nodes: workflow.nodes.filter((n) => n.id !== id), edges };
}

/** The ids of the workflow's nodes that a send, segment or campaign reference names, for checks against the store. */
export function references(workflow: Workflow) {
  const at = (type: NodeType) =>
    workflow.nodes.flatMap((n, i) => (n.type === type ? [{ index: i, config: n.config }] : []));
  return {
    templates: at("send").map(({ index, config }) => ({
      field: `nodes[${index}].config.templateId`,
      id: String(config.templateId),
      channel: String(config.channel),
    })),
    segments: [...at("segment_add"), ...at("segment_remove")].map(({ index, config }) => ({
      field: `nodes[${index}].config.segmentId`,
      id: String(config.segmentId),
    })),
    campaigns: at("enroll_campaign").map(({ index, config }) => ({
      field: `nodes[${index}].config.campaignId`,
      id: String(config.campaignId),
    })),
  };
}
