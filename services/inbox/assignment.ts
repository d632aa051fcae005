import type { LoggerInstance } from "moleculer";
import { MicroBatcher } from "../../lib/batcher";
import { contactMatches, membersAmong, notifyMembers, type Caller } from "./directory";
import type { Static } from "@sinclair/typebox";
import type { ConditionConfig, RoundRobinConfig } from "./inbox.schemas";
import { keywordMatch, withinHours } from "./matching";
import * as rules from "./rules.repo";
import type { RuleRow } from "./rules.repo";
import * as threads from "./threads.repo";
import type { ThreadRow } from "./threads.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Assignment (contract-messaging 11, issue 31 item 6): a new thread takes
 * the first active rule that matches, by priority; a thread is claimed only
 * while unassigned, and a round robin's turn is taken and given in one
 * statement that locks the thread and the rule's row for its own length
 * (rules.takeTurn), so several replicas assign each thread once and each
 * turn once; concurrent new threads take a rule's turns in one statement
 * (rules.takeTurns).
 * Round robins may cap each member's open threads (`maxOpen`; the rest wait
 * and are handed out oldest first as room frees) and hand a thread left
 * unanswered for `reassignAfterMinutes` to the next member.
 */

type RoundRobin = Static<typeof RoundRobinConfig>;
type Condition = Static<typeof ConditionConfig>;

/** How many waiting or unanswered threads a periodic pass handles per rule. */
const PASS_LIMIT = 200;

/** The assignee hears of it (once per assignment). */
export async function notifyAssigned(from: Caller, ws: WorkspaceId, thread: ThreadRow): Promise<void> {
  if (!thread.assignee_id) return;
  await notifyMembers(from, ws, [thread.assignee_id], {
    type: "inbox.assigned",
    title: "A conversation was assigned to you",
    body: thread.subject ?? `New ${thread.channel} conversation`,
    data: { threadId: thread.id, channel: thread.channel, contactId: thread.contact_id },
    dedupeKey: `inbox:${thread.id}:assigned:${new Date(thread.assigned_at ?? Date.now()).getTime()}`,
  });
}

/**
 * Assign a new thread by the workspace's active rules (`activeDefinitions(ws)`)
 * in its zone; answers the assigned thread (null: no rule gave it a member).
 */
export async function assignNewThread(
  from: Caller,
  ws: WorkspaceId,
  active: RuleRow[],
  zone: string,
  thread: ThreadRow,
  text: string,
  now = new Date(),
): Promise<ThreadRow | null> {
  for (const rule of active) {
    if (!withinHours(rule.config.businessHours, now, zone)) continue;
    if (rule.type === "round_robin") return roundRobin(from, ws, rule, thread.id);
    const config = rule.config as Condition;
    if (config.channel && config.channel !== thread.channel) continue;
    if (!keywordMatch(config.keywords ?? [], text)) continue;
    if (config.filter && !(await contactMatches(from, ws, thread.contact_id, config.filter))) continue;
    if (!(await membersAmong(from, ws, [config.assigneeId])).length) continue;
    const claimed = await threads.claimThread(ws, thread.id, config.assigneeId, rule.id);
    if (claimed) await notifyAssigned(from, ws, claimed);
    return claimed;
  }
  return null;
}

/**
 * A round robin's next member with room takes the thread; when all are
 * full the thread waits for this rule. Null when it was not assigned now.
 */
async function roundRobin(
  from: Caller,
  ws: WorkspaceId,
  rule: RuleRow,
  threadId: string,
): Promise<ThreadRow | null> {
  const config = rule.config as RoundRobin;
  const members = await membersAmong(from, ws, config.memberIds);
  if (!members.length) return null;
  const claimed = await turnTaker.add({
    ws,
    ruleId: rule.id,
    threadId,
    members,
    maxOpen: config.maxOpen ?? null,
  });
  if (claimed) await notifyAssigned(from, ws, claimed);
  return claimed;
}

/** A new thread asking a round robin for its turn. */
interface TurnAsk {
  ws: WorkspaceId;
  ruleId: string;
  threadId: string;
  members: string[];
  maxOpen: number | null;
}

/**
 * Concurrent turns (a filed batch's new threads) go as one statement per
 * rule (`rules.takeTurns`) instead of one each, which would queue on the
 * rule's row one round trip after another; turns are given in the order
 * asked. A failed batch is retried ask by ask (lib/batcher.ts).
 */
const turnTaker = new MicroBatcher(
  async (asks: TurnAsk[]): Promise<Array<ThreadRow | null>> => {
    const byRule = new Map<string, TurnAsk[]>();
    for (const ask of asks) {
      const key = JSON.stringify([ask.ws, ask.ruleId, ask.members, ask.maxOpen]);
      byRule.set(key, [...(byRule.get(key) ?? []), ask]);
    }
    const assigned = new Map<string, ThreadRow>();
    await Promise.all(
      [...byRule.values()].map(async (same) => {
        const { ws, ruleId, members, maxOpen } = same[0];
        const rows = await rules.takeTurns(
          ws,
          ruleId,
          same.map((a) => a.threadId),
          members,
          maxOpen,
        );
        for (const row of rows) assigned.set(`${ws}\n${row.id}`, row);
      }),
    );
    return asks.map((ask) => assigned.get(`${ask.ws}\n${ask.threadId}`) ?? null);
  },
  { maxBatch: 100, lanes: 1 },
);

/** Periodic: threads waiting for room go, oldest first, to members whose open threads fell below `maxOpen`. */
export async function assignWaiting(from: Caller, logger: LoggerInstance): Promise<number> {
  let assigned = 0;
  for (const rule of await rules.activeRoundRobins()) {
    if (!(rule.config as RoundRobin).maxOpen) continue;
    try {
      for (const thread of await threads.waitingThreads(rule.workspace_id, rule.id, PASS_LIMIT)) {
        if (!(await roundRobin(from, rule.workspace_id, rule, thread.id))) break;
        assigned += 1;
      }
    } catch (err) {
      logger.warn(`Waiting threads of assignment rule ${rule.id} could not be handed out`, err);
    }
  }
  return assigned;
}

/**
 * Periodic: a thread its contact has waited on for `reassignAfterMinutes`
 * since it was assigned goes to the next member in turn with room (taken
 * from its holder only if they still hold it, so once across replicas).
 */
export async function reassignUnanswered(
  from: Caller,
  logger: LoggerInstance,
  now = new Date(),
): Promise<number> {
  let moved = 0;
  for (const rule of await rules.activeRoundRobins()) {
    const config = rule.config as RoundRobin;
    if (!config.reassignAfterMinutes) continue;
    const ws = rule.workspace_id;
    try {
      const stale = await threads.unansweredThreads(
        ws,
        rule.id,
        config.reassignAfterMinutes,
        now,
        PASS_LIMIT,
      );
      if (!stale.length) continue;
      const members = await membersAmong(from, ws, config.memberIds);
      for (const thread of stale) {
        const holder = thread.assignee_id;
        if (!holder || !members.some((m) => m !== holder)) continue;
        const row = await rules.takeTurn(ws, rule.id, thread.id, members, config.maxOpen ?? null, holder);
        if (!row) continue;
        moved += 1;
        await notifyAssigned(from, ws, row);
      }
    } catch (err) {
      logger.warn(`Unanswered threads of assignment rule ${rule.id} could not be re-assigned`, err);
    }
  }
  return moved;
}
