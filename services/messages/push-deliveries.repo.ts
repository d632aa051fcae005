import { newId } from "../../lib/crypto";
import { query, queryAcrossWorkspacesPrepared } from "../../lib/database";
import type { PushDeliveryView } from "./messages.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** The SQL of push messages' outcomes per subscription (one row per subscription and attempt). */

export interface NewPushDelivery {
  workspaceId: WorkspaceId;
  messageId: string;
  subscriptionId: string;
  subscriptionType: string;
  attempt: number;
  providerType: string | null;
  providerId: string | null;
  status: PushDeliveryView["status"];
  code: string | null;
  providerMessageId: string | null;
}

/** One statement for a batch's outcomes. */
export async function insertPushDeliveries(deliveries: NewPushDelivery[]): Promise<void> {
  if (!deliveries.length) return;
  await queryAcrossWorkspacesPrepared(
    `INSERT INTO push_deliveries (id, workspace_id, message_id, subscription_id, subscription_type, attempt,
            provider_type, provider_id, status, code, provider_message_id)
     SELECT d.id, d.workspace_id, d.message_id, d.subscription_id, d.subscription_type, d.attempt,
            d.provider_type, d.provider_id, d.status, d.code, d.provider_message_id
       FROM jsonb_to_recordset($1::jsonb) AS d(id text, workspace_id text, message_id text, subscription_id text,
            subscription_type text, attempt integer, provider_type text, provider_id text, status text, code text,
            provider_message_id text)`,
    [
      JSON.stringify(
        deliveries.map((d) => ({
          id: newId(),
          workspace_id: d.workspaceId,
          message_id: d.messageId,
          subscription_id: d.subscriptionId,
          subscription_type: d.subscriptionType,
          attempt: d.attempt,
          provider_type: d.providerType,
          provider_id: d.providerId,
          status: d.status,
          code: d.code,
          provider_message_id: d.providerMessageId,
        })),
      ),
    ],
  );
}

interface DeliveryRow {
  subscription_id: string;
  subscription_type: PushDeliveryView["type"];
  attempt: number;
  provider_type: string | null;
  status: PushDeliveryView["status"];
  code: string | null;
  provider_message_id: string | null;
  created_at: Date;
}

/** A push message's outcomes, attempt by attempt. */
export async function messageDeliveries(
  workspaceId: WorkspaceId,
  messageId: string,
): Promise<PushDeliveryView[]> {
  const rows = await query<DeliveryRow>(
    workspaceId,
    `SELECT subscription_id, subscription_type, attempt, provider_type, status, code, provider_message_id, created_at
       FROM push_deliveries WHERE workspace_id = $1 AND message_id = $2
      ORDER BY attempt, created_at, subscription_id`,
    [messageId],
  );
  return rows.map((r) => ({
    subscriptionId: r.subscription_id,
    type: r.subscription_type,
    attempt: r.attempt,
    providerType: r.provider_type,
    status: r.status,
    code: r.code,
    providerMessageId: r.provider_message_id,
    at: r.created_at.toISOString(),
  }));
}
