import { newId } from "../../lib/crypto";
import { Binds, query } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { seal } from "../../lib/secret-box";
import type { PushSubscriptionView, WebPushKeys } from "./push.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** The SQL of contacts' push subscriptions (browsers' web push, gateways' device tokens), scoped by workspace. */

interface SubscriptionRow {
  id: string;
  contact_id: string | null;
  type: PushSubscriptionView["type"];
  endpoint: string | null;
  token: string | null;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

/** A subscription as the sending process reads it: its keys still sealed. */
export interface SendableRow {
  id: string;
  contact_id: string | null;
  type: PushSubscriptionView["type"];
  endpoint: string | null;
  token: string | null;
  keys: string | null;
}

const COLUMNS = "id, contact_id, type, endpoint, token, active, created_at, updated_at";

const view = (r: SubscriptionRow): PushSubscriptionView => ({
  id: r.id,
  contactId: r.contact_id,
  type: r.type,
  endpoint: r.endpoint,
  token: r.token,
  active: r.active,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export interface NewSubscription {
  contactId: string | null;
  type: PushSubscriptionView["type"];
  endpoint: string | null;
  token: string | null;
  keys: WebPushKeys | null;
}

/**
 * Store a subscription, or update the one of its endpoint (web) or token
 * (gateways): active again, its keys and contact renewed (a known contact is
 * never dropped for none). A contact binds only when it is the workspace's.
 * Keys are sealed. Answers it and whether it was new.
 */
export async function saveSubscription(
  workspaceId: WorkspaceId,
  input: NewSubscription,
): Promise<{ subscription: PushSubscriptionView; created: boolean }> {
  const conflict = input.type === "web" ? "(workspace_id, endpoint)" : "(workspace_id, type, token)";
  const [row] = await query<SubscriptionRow & { created: boolean }>(
    workspaceId,
    `INSERT INTO push_subscriptions (id, workspace_id, contact_id, type, endpoint, token, keys)
     SELECT $2, $1, c.id, $4, $5, $6, $7
       FROM (SELECT $3::text AS wanted) w
       LEFT JOIN contacts c ON c.id = w.wanted AND c.workspace_id = $1
     ON CONFLICT ${conflict} DO UPDATE
        SET contact_id = coalesce(EXCLUDED.contact_id, push_subscriptions.contact_id),
            keys = coalesce(EXCLUDED.keys, push_subscriptions.keys), active = true, updated_at = now()
     RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    [
      newId(),
      input.contactId,
      input.type,
      input.endpoint,
      input.token,
      input.keys ? seal(JSON.stringify(input.keys)) : null,
    ],
  );
  return { subscription: view(row), created: row.created };
}

/** The workspace's browser subscription of an endpoint, its keys still sealed. */
export async function webSubscriptionByEndpoint(
  workspaceId: WorkspaceId,
  endpoint: string,
): Promise<{ id: string; contact_id: string | null; keys: string | null } | null> {
  const [row] = await query<{ id: string; contact_id: string | null; keys: string | null }>(
    workspaceId,
    `SELECT id, contact_id, keys FROM push_subscriptions
      WHERE workspace_id = $1 AND type = 'web' AND endpoint = $2`,
    [endpoint],
  );
  return row ?? null;
}

export async function listSubscriptions(
  workspaceId: WorkspaceId,
  page: PageRequest,
  filter: { contactId?: string; type?: string; active?: boolean },
): Promise<Page<PushSubscriptionView>> {
  const binds = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (filter.contactId) where.push(`contact_id = ${binds.p(filter.contactId)}`);
  if (filter.type) where.push(`type = ${binds.p(filter.type)}`);
  if (filter.active !== undefined) where.push(`active = ${binds.p(filter.active)}`);
  const clause = where.join(" AND ");
  return selectPage<SubscriptionRow, PushSubscriptionView>(
    workspaceId,
    {
      select: `SELECT ${COLUMNS} FROM push_subscriptions WHERE ${clause}`,
      orderBy: "created_at DESC, id DESC",
      countFrom: `FROM push_subscriptions WHERE ${clause}`,
    },
    binds.values,
    page,
    view,
  );
}

export async function findSubscription(
  workspaceId: WorkspaceId,
  id: string,
): Promise<PushSubscriptionView | null> {
  const [row] = await query<SubscriptionRow>(
    workspaceId,
    `SELECT ${COLUMNS} FROM push_subscriptions WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
  return row ? view(row) : null;
}

/** Change `active` and the contact (null unbinds it); null when the subscription is not the workspace's. */
export async function updateSubscription(
  workspaceId: WorkspaceId,
  id: string,
  changes: { active?: boolean; contactId?: string | null },
): Promise<PushSubscriptionView | null> {
  const binds = Binds.inWorkspace([id]);
  const sets = ["updated_at = now()"];
  if (changes.active !== undefined) sets.push(`active = ${binds.p(changes.active)}`);
  if (changes.contactId !== undefined) sets.push(`contact_id = ${binds.p(changes.contactId)}`);
  const [row] = await query<SubscriptionRow>(
    workspaceId,
    `UPDATE push_subscriptions SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    binds.values,
  );
  return row ? view(row) : null;
}

export async function deleteSubscription(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `DELETE FROM push_subscriptions WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

/** The active subscriptions of the contacts (with their sealed keys), for the process that sends. */
export async function activeSubscriptions(
  workspaceId: WorkspaceId,
  contactIds: string[],
): Promise<SendableRow[]> {
  if (!contactIds.length) return [];
  return query<SendableRow>(
    workspaceId,
    `SELECT id, contact_id, type, endpoint, token, keys FROM push_subscriptions
      WHERE workspace_id = $1 AND contact_id = ANY($2::text[]) AND active
      ORDER BY contact_id, created_at, id`,
    [contactIds],
  );
}

/** The subscriptions, active or not, by id (push/test names one). */
export async function subscriptionsById(workspaceId: WorkspaceId, ids: string[]): Promise<SendableRow[]> {
  return query<SendableRow>(
    workspaceId,
    `SELECT id, contact_id, type, endpoint, token, keys FROM push_subscriptions
      WHERE workspace_id = $1 AND id = ANY($2::text[])`,
    [ids],
  );
}

/** A push service said these are gone: they stop receiving. Answers how many were active. */
export async function deactivate(workspaceId: WorkspaceId, ids: string[]): Promise<number> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `UPDATE push_subscriptions SET active = false, updated_at = now()
      WHERE workspace_id = $1 AND id = ANY($2::text[]) AND active RETURNING id`,
    [ids],
  );
  return rows.length;
}
