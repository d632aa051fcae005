import { newId } from "../../lib/crypto";
import { Binds, query, queryAcrossWorkspaces } from "../../lib/database";
import type { Endpoint } from "./webhooks.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/** Queries of webhook endpoints (`webhook_endpoints`). Workspace id first. */

interface EndpointRow {
  id: string;
  workspace_id: WorkspaceId;
  name: string | null;
  url: string | null;
  events: string[];
  direction: "INBOUND" | "OUTBOUND";
  active: boolean;
  secret_sealed: string | null;
  created_at: Date;
  updated_at: Date;
  deliveries?: string | number;
}

function toEndpoint(row: EndpointRow): Endpoint {
  const endpoint: Endpoint = {
    id: row.id,
    name: row.name,
    url: row.url,
    events: row.events ?? [],
    direction: row.direction,
    active: row.active,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
  if (row.deliveries !== undefined) endpoint._count = { deliveries: Number(row.deliveries) };
  return endpoint;
}

export async function listEndpoints(workspaceId: WorkspaceId): Promise<Endpoint[]> {
  const rows = await query<EndpointRow>(
    workspaceId,
    `SELECT e.*, (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id) AS deliveries
       FROM webhook_endpoints e WHERE e.workspace_id = $1
      ORDER BY e.created_at DESC, e.id DESC`,
  );
  return rows.map(toEndpoint);
}

export async function insertEndpoint(
  workspaceId: WorkspaceId,
  input: {
    name: string | null;
    url: string | null;
    events: string[];
    direction: string;
    secretSealed: string;
    createdBy: string | null;
  },
): Promise<Endpoint> {
  const [row] = await query<EndpointRow>(
    workspaceId,
    `INSERT INTO webhook_endpoints (id, workspace_id, name, url, events, direction, secret_sealed, created_by)
     VALUES ($2, $1, $3, $4, CAST($5 AS jsonb), $6, $7, $8)
     RETURNING *`,
    [
      newId(),
      input.name,
      input.url,
      JSON.stringify(input.events),
      input.direction,
      input.secretSealed,
      input.createdBy,
    ],
  );
  return toEndpoint(row);
}

export async function findEndpoint(workspaceId: WorkspaceId, id: string): Promise<EndpointRow | null> {
  const [row] = await query<EndpointRow>(
    workspaceId,
    `SELECT * FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2`,
    [id],
  );
  return row ?? null;
}

/** The inbound receiver looks an endpoint up by id alone (its workspace comes from the row). */
export async function findEndpointById(id: string): Promise<EndpointRow | null> {
  const [row] = await queryAcrossWorkspaces<EndpointRow>(`SELECT * FROM webhook_endpoints WHERE id = $1`, [
    id,
  ]);
  return row ?? null;
}

export async function updateEndpoint(
  workspaceId: WorkspaceId,
  id: string,
  changes: { name?: string | null; url?: string; events?: string[]; active?: boolean },
): Promise<Endpoint | null> {
  const values: Record<string, unknown> = {
    name: changes.name,
    url: changes.url,
    events: changes.events === undefined ? undefined : JSON.stringify(changes.events),
    active: changes.active,
  };
  const binds = Binds.inWorkspace([id]);
  const sets = Object.keys(values)
    .filter((k) => values[k] !== undefined)
    .map((k) => `${k} = ${binds.p(values[k], k === "events" ? "jsonb" : undefined)}`);
  sets.push("updated_at = now()");
  const [row] = await query<EndpointRow>(
    workspaceId,
    `UPDATE webhook_endpoints e SET ${sets.join(", ")} WHERE workspace_id = $1 AND id = $2
     RETURNING e.*, (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id) AS deliveries`,
    binds.values,
  );
  return row ? toEndpoint(row) : null;
}

/** Deliveries go with it (ON DELETE CASCADE). */
export async function deleteEndpoint(workspaceId: WorkspaceId, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(
    workspaceId,
    `DELETE FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2 RETURNING id`,
    [id],
  );
  return rows.length > 0;
}
