import { pickVariant } from "../templates/render";
import { durationMs, successor, type Workflow, type WorkflowNode } from "./workflow";

/**
 * What a workflow does at each node, for the real run and the dry-run
 * alike, so the two cannot disagree: the run performs the actions and
 * persists the waits, the dry-run only describes them.
 */

/** Facts about the contact a decision needs, answered from the store (or, in a dry-run, as the contract says). */
export interface Probe {
  /** Whether the contact matches a segment filter now. */
  matches(filter: unknown): Promise<boolean>;
  /** Whether the message sent at `nodeId` in this enrollment was opened (clicked, on `url` when given). */
  engaged(nodeId: string, kind: "opened" | "clicked", url?: string): Promise<boolean>;
  /** A decided A/B split's winner. */
  winner(nodeId: string): Promise<string | null>;
}

export interface Position {
  campaignId: string;
  enrollmentId: string;
  contactId: string;
  /** True when the enrollment already waited at this node and its wait is over. */
  resumed: boolean;
  /** The branch a wait resumes by (`event` when its event came). */
  resumeBranch: string | null;
  now: Date;
}

export type Decision =
  /** An action node: perform it, then go on. */
  | { kind: "act"; reason: string }
  | { kind: "branch"; branch: string; reason: string }
  | { kind: "wait"; until: Date; waitingEvent: string | null; reason: string }
  | { kind: "end"; status: "completed" | "exited"; reason: string };

/** The moment a wait ends (a duration from now, a fixed time, or an event's timeout). */
export function waitEnd(node: WorkflowNode, now: Date): Date {
  const c = node.config;
  if (typeof c.until === "string") return new Date(Math.max(now.getTime(), Date.parse(c.until)));
  return new Date(now.getTime() + (durationMs("event" in c ? c.timeout : c.duration) ?? 0));
}

export async function decide(node: WorkflowNode, at: Position, probe: Probe): Promise<Decision> {
  const c = node.config;
  switch (node.type) {
    case "entry":
      return { kind: "act", reason: "entered" };
    case "wait": {
      const event = (c.event as { type: string } | undefined)?.type ?? null;
      if (at.resumed) {
        if (!event) return { kind: "act", reason: "waited" };
        const branch = at.resumeBranch === "event" ? "event" : "timeout";
        return { kind: "branch", branch, reason: branch === "event" ? `${event} happened` : "timed out" };
      }
      const until = waitEnd(node, at.now);
      return {
        kind: "wait",
        until,
        waitingEvent: event,
        reason: event
          ? `waits for ${event} until ${until.toISOString()}`
          : `waits until ${until.toISOString()}`,
      };
    }
    case "condition": {
      let yes: boolean;
      if ("filter" in c) yes = await probe.matches(c.filter);
      else if ("messageOpened" in c)
        yes = await probe.engaged((c.messageOpened as { nodeId: string }).nodeId, "opened");
      else {
        const clicked = c.messageClicked as { nodeId: string; url?: string };
        yes = await probe.engaged(clicked.nodeId, "clicked", clicked.url);
      }
      return {
        kind: "branch",
        branch: yes ? "yes" : "no",
        reason: yes ? "condition met" : "condition not met",
      };
    }
    case "ab_split": {
      const variants = c.variants as Array<{ id: string; weight: number }>;
      const winner = await probe.winner(node.id);
      // Contract 2's pick, keyed by campaign and node: a contact keeps its variant; later ones take a winner.
      const branch = pickVariant(`${at.campaignId}:${node.id}`, at.contactId, variants, winner)!;
      return { kind: "branch", branch, reason: winner ? `winner ${winner}` : `variant ${branch}` };
    }
    case "random_split": {
      const branch = pickVariant(
        node.id,
        at.enrollmentId,
        c.branches as Array<{ id: string; weight: number }>,
      )!;
      return { kind: "branch", branch, reason: `branch ${branch}` };
    }
    case "goal":
      return { kind: "end", status: "completed", reason: "goal" };
    case "exit":
      return { kind: "end", status: "exited", reason: "exit" };
    default:
      return { kind: "act", reason: node.type };
  }
}

/** Where a decision leads: the next node, or null at the path's end. */
export function nextNode(workflow: Workflow, node: WorkflowNode, decision: Decision): string | null {
  if (decision.kind === "branch") return successor(workflow, node.id, decision.branch);
  return successor(workflow, node.id, null);
}

export interface PathStep {
  nodeId: string;
  outcome: "ok" | "branched" | "skipped" | "failed";
  branch: string | null;
  reason: string;
}

/**
 * The dry-run (contract 9): the path from the entry, waits passing (an
 * event wait by its timeout), message conditions `no` (nothing was sent),
 * filters evaluated against the contact as it is; saves nothing.
 */
export async function dryRun(
  workflow: Workflow,
  at: Omit<Position, "resumed" | "resumeBranch">,
  probe: Omit<Probe, "engaged">,
): Promise<PathStep[]> {
  const path: PathStep[] = [];
  const dry: Probe = { ...probe, engaged: async () => false };
  let node = workflow.nodes.find((n) => n.type === "entry");
  for (let steps = 0; node && steps <= workflow.nodes.length; steps++) {
    let decision = await decide(node, { ...at, resumed: false, resumeBranch: null }, dry);
    if (decision.kind === "wait") {
      const reason = decision.reason;
      decision = await decide(node, { ...at, resumed: true, resumeBranch: null }, dry);
      decision = { ...decision, reason: `${reason}; then ${decision.reason}` };
    }
    path.push({
      nodeId: node.id,
      outcome: decision.kind === "branch" ? "branched" : "ok",
      branch: decision.kind === "branch" ? decision.branch : null,
      reason: decision.kind === "act" && node.type !== "wait" ? describe(node) : decision.reason,
    });
    if (decision.kind === "end") break;
    const next = nextNode(workflow, node, decision);
    node = next ? workflow.nodes.find((n) => n.id === next) : undefined;
  }
  return path;
}

/** What an action node would do, in words. */
function describe(node: WorkflowNode): string {
  const c = node.config;
  switch (node.type) {
    case "entry":
      return "entered";
    case "send":
      return `would send template ${String(c.templateId)} (${String(c.channel)})`;
    case "update_contact":
      return "would update the contact";
    case "segment_add":
      return `would add to segment ${String(c.segmentId)}`;
    case "segment_remove":
      return `would remove from segment ${String(c.segmentId)}`;
    case "enroll_campaign":
      return `would enroll in campaign ${String(c.campaignId)}`;
    case "webhook":
      return `would post to ${String(c.url)}`;
    case "create_task":
      return `would create the task "${String(c.title)}"`;
    case "notify_member":
      return "would notify a member";
    default:
      return node.type;
  }
}
