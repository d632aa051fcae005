import { newId } from "../../lib/crypto";
import { selectRows } from "../../lib/database";
import { seal } from "../../lib/secret-box";
import type { PushSubscriptionView } from "./content.schemas";

/** The SQL of browsers' web push subscriptions, scoped by workspace. */

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

/**
 * Store a browser's subscription, or update the one of its endpoint (active
 * again, its keys and contact renewed; a known contact is never dropped for
 * none). Its keys are sealed. Answers it and whether it was new.
 */
export async function saveWebSubscription(
  workspaceId: string,
  contactId: string | null,
  endpoint: string,
  keys: { p256dh: string; auth: string },
): Promise<{ subscription: PushSubscriptionView; created: boolean }> {
  const [row] = await selectRows<SubscriptionRow & { created: boolean }>(
    `INSERT INTO push_subscriptions (id, workspace_id, contact_id, type, endpoint, keys)
     SELECT $1, $2, c.id, 'web', $4, $5
       FROM (SELECT $3::text AS wanted) w
       LEFT JOIN contacts c ON c.id = w.wanted AND c.workspace_id = $2
     ON CONFLICT (workspace_id, endpoint) DO UPDATE
        SET contact_id = coalesce(EXCLUDED.contact_id, push_subscriptions.contact_id), keys = EXCLUDED.keys,
            active = true, updated_at = now()
     RETURNING id, contact_id, type, endpoint, token, active, created_at, updated_at, (xmax = 0) AS created`,
    [newId(), workspaceId, contactId, endpoint, seal(JSON.stringify(keys))],
  );
  return { subscription: view(row), created: row.created };
}
