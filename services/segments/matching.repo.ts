import { config } from "../../lib/config";
import { Binds, database, query, queryAcrossWorkspaces } from "../../lib/database";
import { queryTooExpensive } from "../../lib/errors";
import { compileField, compileFilter } from "./filter-compiler";
import { type FieldCondition, type FilterGroup } from "./filter-schema";
import type { WorkspaceId } from "../../lib/tenancy";

/** Filters run against the workspace's contacts and events (one contact, a set, a bounded preview). */

/** Whether one contact matches a checked filter now; false for a contact not in the workspace. */
export async function contactMatches(
  workspaceId: WorkspaceId,
  contactId: string,
  filter: FilterGroup,
): Promise<boolean> {
  return (await contactsMatching(workspaceId, [contactId], filter)).length > 0;
}

/** Those of `contactIds` (of the workspace) a checked filter matches now. */
export async function contactsMatching(
  workspaceId: WorkspaceId,
  contactIds: string[],
  filter: FilterGroup,
): Promise<string[]> {
  const binds = Binds.inWorkspace([contactIds]);
  const predicate = compileFilter(filter, binds, { mode: "row", workspaceParam: "$1" });
  const rows = await query<{ id: string }>(
    workspaceId,
    `SELECT c.id FROM contacts c WHERE c.workspace_id = $1 AND c.id = ANY($2::text[]) AND ${predicate}`,
    binds.values,
  );
  return rows.map((r) => r.id);
}

/** Whether one event of the workspace meets checked conditions on its fields; false for an unknown event. */
export async function eventMatches(
  workspaceId: WorkspaceId,
  eventId: string,
  where: FieldCondition[],
): Promise<boolean> {
  const binds = Binds.inWorkspace([eventId]);
  const predicate = where.length ? where.map((w) => compileField(w, binds, "event")).join(" AND ") : "true";
  const [row] = await query<{ matches: boolean }>(
    workspaceId,
    `SELECT COALESCE(${predicate}, false) AS matches FROM events e WHERE e.workspace_id = $1 AND e.id = $2`,
    binds.values,
  );
  return row?.matches ?? false;
}

/** Contacts in the workspace; over the sync limit, segment (re)computation runs as a job. */
export async function contactCount(workspaceId: WorkspaceId): Promise<number> {
  const [{ n }] = await query<{ n: string }>(
    workspaceId,
    `SELECT count(*) AS n FROM contacts WHERE workspace_id = $1`,
  );
  return Number(n);
}

/** Public contact fields (contract "Contacts") for preview samples. */
export interface ContactSample {
  id: string;
  email: string | null;
  phone: string | null;
  firstName: string | null;
  lastName: string | null;
  externalId: string | null;
  tags: string[];
  attributes: Record<string, unknown>;
  stage: string | null;
  score: number;
  createdAt: Date;
  updatedAt: Date;
}

const SAMPLE_SIZE = 10;

/** Count and first matches of an unsaved filter, bounded by a statement timeout. Saves nothing. */
export async function preview(
  workspaceId: WorkspaceId,
  filter: FilterGroup,
): Promise<{ count: number; sample: ContactSample[] }> {
  const sequelize = await database();
  const timeout = Math.max(1, config().segmentPreviewTimeoutMs);
  try {
    return await sequelize.transaction(async (transaction) => {
      await queryAcrossWorkspaces(`SET TRANSACTION READ ONLY`, [], transaction);
      await queryAcrossWorkspaces(`SET LOCAL statement_timeout = ${Number(timeout)}`, [], transaction);
      await queryAcrossWorkspaces(`SET LOCAL work_mem = '256MB'`, [], transaction);
      const binds = Binds.inWorkspace();
      const predicate = compileFilter(filter, binds, { mode: "set", workspaceParam: "$1" });
      const [{ n }] = await query<{ n: string }>(
        workspaceId,
        `SELECT count(*) AS n FROM contacts c WHERE c.workspace_id = $1 AND ${predicate}`,
        binds.values,
        transaction,
      );
      const rows = await query<Record<string, unknown>>(
        workspaceId,
        `SELECT c.id, c.email, c.phone, c.first_name, c.last_name, c.external_id, c.tags, c.attributes, c.stage, c.score,
                c.created_at, c.updated_at
           FROM contacts c WHERE c.workspace_id = $1 AND ${predicate}
          ORDER BY c.created_at DESC, c.id DESC LIMIT ${SAMPLE_SIZE}`,
        binds.values,
        transaction,
      );
      return {
        count: Number(n),
        sample: rows.map((r) => ({
          id: r.id as string,
          email: r.email as string | null,
          phone: r.phone as string | null,
          firstName: r.first_name as string | null,
          lastName: r.last_name as string | null,
          externalId: r.external_id as string | null,
          tags: r.tags as string[],
          attributes: r.attributes as Record<string, unknown>,
          stage: r.stage as string | null,
          score: r.score as number,
          createdAt: r.created_at as Date,
          updatedAt: r.updated_at as Date,
        })),
      };
    });
  } catch (err) {
    const code = (err as { original?: { code?: string }; parent?: { code?: string } }).original?.code;
    if (code === "57014") {
      throw queryTooExpensive(
        `The preview took longer than ${timeout} ms; narrow the filter or save it and recompute as a job`,
      );
    }
    throw err;
  }
}

/** The type of a recorded event, or undefined. */
export async function eventTypeOf(workspaceId: WorkspaceId, eventId: string): Promise<string | undefined> {
  const [row] = await query<{ type: string }>(
    workspaceId,
    `SELECT type FROM events WHERE workspace_id = $1 AND id = $2`,
    [eventId],
  );
  return row?.type;
}
