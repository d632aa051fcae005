import type { ServiceBroker } from "moleculer";
import { notFound, type FieldIssue } from "../../lib/errors";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import type { ContactWrite } from "./fields";
import type { WorkspaceId } from "../../lib/tenancy";

type References = Pick<ContactWrite, "companyId" | "ownerId">;

const distinct = (values: Array<string | null | undefined>) => [
  ...new Set(values.filter((v): v is string => typeof v === "string")),
];

export const COMPANY_ISSUE = "must name a company of this workspace";
export const OWNER_ISSUE = "must name a member of this workspace";

/**
 * A contact's `companyId` and `ownerId` must name a company and a member of
 * its own workspace. The companies and workspaces services own those rows,
 * so they are asked, once for a whole batch. One issue (or null) per write.
 */
export async function referenceIssues(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  writes: References[],
): Promise<Array<FieldIssue | null>> {
  const companyIds = distinct(writes.map((w) => w.companyId));
  const ownerIds = distinct(writes.map((w) => w.ownerId));
  // Without a companies service no company exists: every companyId is unknown.
  const [companies, owners] = await Promise.all([
    companyIds.length && isServiceAvailable(broker, "companies")
      ? systemCall<string[]>(broker, workspaceId, "companies.existingIds", { ids: companyIds })
      : [],
    ownerIds.length
      ? systemCall<string[]>(broker, workspaceId, "workspaces.memberUserIds", {
          workspaceId,
          userIds: ownerIds,
        })
      : [],
  ]);
  const knownCompanies = new Set(companies);
  const knownOwners = new Set(owners);
  return writes.map((w) => {
    if (w.companyId && !knownCompanies.has(w.companyId))
      return { field: "companyId", message: COMPANY_ISSUE };
    if (w.ownerId && !knownOwners.has(w.ownerId)) return { field: "ownerId", message: OWNER_ISSUE };
    return null;
  });
}

/** One write's references, as the 404 the contract gives any id outside the workspace. */
export async function assertReferences(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  write: References,
): Promise<void> {
  const [issue] = await referenceIssues(broker, workspaceId, [write]);
  if (issue) throw notFound(issue.field === "companyId" ? "Company" : "Owner", issue);
}
