import { QueryTypes } from "sequelize";
import { database } from "../../lib/database";
import { fieldError, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";

/** Checks every CRM service makes on ids a client sends. */

/** A date-time param as the repos take it (absent or null stays so). */
export const asDate = <T extends string | null | undefined>(value: T): Date | Exclude<T, string> =>
  (typeof value === "string" ? new Date(value) : value) as Date | Exclude<T, string>;

/** Owners and assignees are users who are members of the workspace (400 naming the field otherwise). */
export async function assertMember(
  ctx: AppContext<object>,
  workspaceId: string,
  userId: string | null | undefined,
  field: string,
) {
  if (userId === null || userId === undefined) return;
  const role = await ctx.call("workspaces.membership", { workspaceId, userId });
  if (!role) throw fieldError(field, "must be the user id of a member of this workspace");
}

const REFERENCES = {
  contactId: ["contacts", "Contact"],
  companyId: ["companies", "Company"],
  dealId: ["deals", "Deal"],
} as const;
export type ReferenceField = keyof typeof REFERENCES;

/**
 * A referenced contact, company or deal must exist in this workspace; one of
 * another workspace is simply not found (404), as the contract has it for
 * any id. The row itself stays its owner's: this only asks whether it exists.
 */
export async function assertReferences(
  workspaceId: string,
  refs: Partial<Record<ReferenceField, string | null | undefined>>,
) {
  const sequelize = await database();
  for (const [field, id] of Object.entries(refs) as Array<[ReferenceField, string | null | undefined]>) {
    if (id === null || id === undefined) continue;
    const [table, what] = REFERENCES[field];
    const rows = await sequelize.query(`SELECT 1 FROM ${table} WHERE workspace_id = $1 AND id = $2`, {
      bind: [workspaceId, id],
      type: QueryTypes.SELECT,
    });
    if (!rows.length) throw notFound(what);
  }
}

/** Fields present in a PATCH body (undefined means "not sent"). */
export const sentFields = (params: Record<string, unknown>, fields: readonly string[]) =>
  fields.filter((f) => params[f] !== undefined);
