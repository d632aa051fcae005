import { randomHex } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace, signUp, type SignedInUser } from "../../helpers/http";

/** Services a CRM suite runs with: the gateway, auth, workspaces (membership, audit) and the CRM area. */
export const CRM_SERVICES = ["api", "auth", "workspaces", "crm"];

export interface CrmWorld {
  app: TestApp;
  owner: SignedInUser;
  ws: string;
  workspaceId: string;
  /** A MEMBER and a VIEWER of the workspace. */
  member: SignedInUser;
  viewer: SignedInUser;
  /** API keys of the workspace: contacts.read only, and every scope. */
  readKey: HttpClient;
  fullKey: HttpClient;
  /** Another workspace, owned by someone else. */
  other: { owner: SignedInUser; ws: string; workspaceId: string };
}

async function addMember(owner: SignedInUser, ws: string, user: SignedInUser, role: string) {
  const res = await owner.client.post(`${ws}/members`, { email: user.email, role });
  if (res.status !== 201) throw new Error(`add member failed: ${res.status} ${res.text}`);
}

async function apiKey(app: TestApp, owner: SignedInUser, ws: string, scopes: string[]): Promise<HttpClient> {
  const res = await owner.client.post(`${ws}/keys`, { name: `key ${scopes.join(" ")}`, scopes });
  if (res.status !== 201) throw new Error(`key create failed: ${res.status} ${res.text}`);
  const client = app.http();
  client.bearer = res.body.key;
  return client;
}

export async function crmWorld(
  extra: { services?: string[]; env?: Record<string, string> } = {},
): Promise<CrmWorld> {
  const app = await startApp({ services: [...CRM_SERVICES, ...(extra.services ?? [])], env: extra.env });
  const { owner, ws, workspaceId } = await ownerWithWorkspace(app.baseUrl);
  const [member, viewer] = await Promise.all([
    signUp(app.baseUrl, "Mia Member"),
    signUp(app.baseUrl, "Vic Viewer"),
  ]);
  await addMember(owner, ws, member, "MEMBER");
  await addMember(owner, ws, viewer, "VIEWER");
  const [readKey, fullKey] = await Promise.all([
    apiKey(app, owner, ws, ["contacts.read"]),
    apiKey(app, owner, ws, []),
  ]);
  const other = await ownerWithWorkspace(app.baseUrl);
  return { app, owner, ws, workspaceId, member, viewer, readKey, fullKey, other };
}

/** A contact row (the contacts service is another area; its table is all these suites need). */
export async function insertContact(
  workspaceId: string,
  fields: { email?: string; firstName?: string; lastName?: string } = {},
) {
  const sequelize = await database();
  const id = `ct_${randomHex(8)}`;
  await sequelize.query(
    `INSERT INTO contacts (id, workspace_id, email, first_name, last_name) VALUES (:id, :workspaceId, :email, :firstName, :lastName)`,
    {
      replacements: {
        id,
        workspaceId,
        email: fields.email ?? `c-${randomHex(4)}@example.test`,
        firstName: fields.firstName ?? null,
        lastName: fields.lastName ?? null,
      },
    },
  );
  return id;
}
