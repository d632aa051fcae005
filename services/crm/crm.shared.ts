import { fieldError, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { systemCall } from "../../lib/system-call";
import { existingCompanyIds } from "./companies.repo";
import { findDeal } from "./deals.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Checks every CRM service makes on ids a client sends. */

/** A date-time param as the repos take it (absent or null stays so). */
export const asDate = <T extends string | null | undefined>(value: T): Date | Exclude<T, string> =>
  (typeof value === "string" ? new Date(value) : value) as Date | Exclude<T, string>;

/** Owners and assignees are users who are members of the workspace (400 naming the field otherwise). */
export async function assertMember(
  ctx: AppContext<object>,
  workspaceId: WorkspaceId,
  userId: string | null | undefined,
  field: string,
) {
  if (userId === null || userId === undefined) return;
  const role = await ctx.call("workspaces.membership", { workspaceId, userId });
  if (!role) throw fieldError(field, "must be the user id of a member of this workspace");
}

export type ReferenceField = "contactId" | "companyId" | "dealId";

/**
 * A referenced contact, company or deal must exist in this workspace; one of
 * another workspace is simply not found (404), as the contract has it for
 * any id. A contact is asked of its area (which may run on another node).
 */
export async function assertReferences(
  ctx: AppContext<object>,
  workspaceId: WorkspaceId,
  refs: Partial<Record<ReferenceField, string | null | undefined>>,
) {
  const { contactId, companyId, dealId } = refs;
  if (contactId !== null && contactId !== undefined) {
    const found = await systemCall<string[]>(ctx, workspaceId, "contacts.existingIds", {
      ids: [contactId],
    });
    if (!found.length) throw notFound("Contact");
  }
  if (
    companyId !== null &&
    companyId !== undefined &&
    !(await existingCompanyIds(workspaceId, [companyId])).length
  )
    throw notFound("Company");
  if (dealId !== null && dealId !== undefined && !(await findDeal(workspaceId, dealId)))
    throw notFound("Deal");
}

/** Fields present in a PATCH body (undefined means "not sent"). */
export const sentFields = (params: Record<string, unknown>, fields: readonly string[]) =>
  fields.filter((f) => params[f] !== undefined);
