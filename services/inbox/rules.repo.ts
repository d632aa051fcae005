import { newId } from "../../lib/crypto";
import { MicroBatcher } from "../../lib/batcher";
import { Binds, query, queryAcrossWorkspaces, queryAcrossWorkspacesPrepared } from "../../lib/database";
import type { AutoReplyRow } from "./auto-replies.repo";
import type { AssignmentRuleView, RuleConfig } from "./inbox.schemas";
import type { ThreadRow } from "./threads.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on assignment rules, the round robin's cursor included; each takes the workspace id first. */

export interface RuleRow {
  id: string;
  workspace_id: WorkspaceId;
  name: string;
  type: "round_robin" | "condition";
  priority: number;
  active: boolean;
  config: RuleConfig;
  cursor: number;
  created_at: Date;
  updated_at: Date;
}

export const ruleView = (row: RuleRow): AssignmentRuleView => ({
  id: row.id,
  name: row.name,
  type: row.type,
  priority: row.priority,
  active: row.active,
  config: row.config as Record<string, unknown>,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** The workspace's rules in the order new threads try them: lowest priority number first. */
export function listRules(workspaceId: WorkspaceId): Promise<RuleRow[]> {
  return query<RuleRow>(
    workspaceId,
    `SELECT * FROM inbox_assignment_rules WHERE workspace_id = $1 ORDER BY priority, created_at, id`,
  );
}

/** A workspace's active assignment rules (in the order new threads try them) and auto-replies (oldest first). */
export interface ActiveDefinitions {
  rules: RuleRow[];
  replies: AutoReplyRow[];
}

/** A row read as JSON, its times made dates again. */
const withDates = <T extends { created_at: Date; updated_at: Date }>(row: T): T => ({
  ...row,
  created_at: new Date(row.created_at),
  updated_at: new Date(row.updated_at),
});

/**
 * Concurrent inbound messages read their workspaces' active rules and
 * auto-replies together: one statement a batch for both.
 */
const definitionsReader = new MicroBatcher(
  async (workspaceIds: WorkspaceId[]): Promise<ActiveDefinitions[]> => {
    const rows = await queryAcrossWorkspacesPrepared<{
      workspace_id: WorkspaceId;
      rules: RuleRow[];
      replies: AutoReplyRow[];
    }>(
      `SELECT w.id AS workspace_id,
              (SELECT coalesce(json_agg(r ORDER BY r.priority, r.created_at, r.id), '[]') FROM inbox_assignment_rules r
                WHERE r.workspace_id = w.id AND r.active) AS rules,
              (SELECT coalesce(json_agg(a ORDER BY a.created_at, a.id), '[]') FROM inbox_auto_replies a
                WHERE a.workspace_id = w.id AND a.active) AS replies
         FROM unnest($1::text[]) AS w(id)`,
      [[...new Set(workspaceIds)]],
    );
    const byWorkspace = new Map(rows.map((r) => [r.workspace_id, r]));
    return workspaceIds.map((ws) => ({
      rules: (byWorkspace.get(ws)?.rules ?? []).map(withDates),
      replies: (byWorkspace.get(ws)?.replies ?? []).map(withDates),
    }));
  },
  { maxBatch: 200, lanes: 1 },
);

/** The workspace's active assignment rules and auto-replies. */
export const activeDefinitions = (workspaceId: WorkspaceId): Promise<ActiveDefinitions> =>
  definitionsReader.add(workspaceId);

export async function findRule(workspaceId: WorkspaceId, ruleId: string): Promise<RuleRow | null> {
  const [row] = await query<RuleRow>(
    workspaceId,
    `SELECT * FROM inbox_assignment_rules WHERE workspace_id = $1 AND id = $2`,
    [ruleId],
  );
  return row ?? null;
}

export async function insertRule(
  workspaceId: WorkspaceId,
  input: { name: string; type: RuleRow["type"]; priority: number; active: boolean; config: RuleConfig },
): Promise<RuleRow> {
  const [row] = await query<RuleRow>(
    workspaceId,
    `INSERT INTO inbox_assignment_rules (id, workspace_id, name, type, priority, active, config)
     VALUES ($2, $1, $3, $4, $5, $6, $7::jsonb) RETURNING *`,
    [newId(), input.name, input.type, input.priority, input.active, JSON.stringify(input.config)],
  );
  return row;
}

export async function updateRule(
  workspaceId: WorkspaceId,
  ruleId: string,
  changes: { name?: string; priority?: number; active?: boolean; config?: RuleConfig },
): Promise<RuleRow | null> {
  const b = Binds.inWorkspace([ruleId]);
  const sets = ["updated_at = now()"];
  if (changes.name !== undefined) sets.push(`name = ${b.p(changes.name)}`);
  if (changes.priority !== undefined) sets.push(`priority = ${b.p(changes.priority)}`);
  if (changes.active !== undefined) sets.push(`active = ${b.p(changes.active)}`);
  if (changes.config !== undefined)
    sets.push(`config = ${b.p(JSON.stringify(changes.config), "jsonb")}`, "cursor = 0");
  const [row] = await query<RuleRow>(
    workspaceId,
    `UPDATE inbox_assignment_rules SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING *`,
    b.values,
  );
  return row ?? null;
}

export async function deleteRule(workspaceId: WorkspaceId, ruleId: string): Promise<boolean> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `DELETE FROM inbox_assignment_rules WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [ruleId],
  );
  return rows.length > 0;
}

/**
 * A round robin's turn, taken and given in one statement (`inbox_take_turn`,
 * migration 0086): the next of `memberIds` from the rule's cursor with fewer
 * than `maxOpen` open threads (no limit when null) gets the thread, and the
 * cursor moves past them. `holder` null: only while the thread is unassigned
 * (when every member is full it waits for the rule); else only while the
 * holder still has it open, and never back to them. Null when not given now.
 */
export async function takeTurn(
  workspaceId: WorkspaceId,
  ruleId: string,
  threadId: string,
  memberIds: string[],
  maxOpen: number | null,
  holder: string | null,
): Promise<ThreadRow | null> {
  const [row] = await query<ThreadRow>(
    workspaceId,
    `SELECT * FROM inbox_take_turn($1, $2, $3, $4::text[], $5::int, $6)`,
    [ruleId, threadId, memberIds, maxOpen, holder],
  );
  return row ?? null;
}

/**
 * A round robin's turns for unassigned threads in one statement
 * (`inbox_take_turns`, migration 0107): each thread still unassigned takes,
 * in the order given, the next of `memberIds` with room, as `takeTurn` with
 * no holder does thread by thread. Answers the threads assigned.
 */
export function takeTurns(
  workspaceId: WorkspaceId,
  ruleId: string,
  threadIds: string[],
  memberIds: string[],
  maxOpen: number | null,
): Promise<ThreadRow[]> {
  return query<ThreadRow>(
    workspaceId,
    `SELECT * FROM inbox_take_turns($1, $2, $3::text[], $4::text[], $5::int)`,
    [ruleId, threadIds, memberIds, maxOpen],
  );
}

/** Active round-robin rules of every workspace (the periodic capacity and re-assignment passes). */
export function activeRoundRobins(): Promise<RuleRow[]> {
  return queryAcrossWorkspaces<RuleRow>(
    `SELECT * FROM inbox_assignment_rules WHERE active AND type = 'round_robin' ORDER BY workspace_id, priority, id`,
    [],
  );
}
