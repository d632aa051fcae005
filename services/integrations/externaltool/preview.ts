import { PREVIEW_LIMIT } from "../integrations.schemas";
import { FIELD_MAPPING, sampleOf } from "./members";
import { externalTool } from "./settings";
import type { WorkspaceId } from "../../../lib/tenancy";

/** `preview`: the list's total, its first members as they would import, and the mapping of remote fields. */
export async function previewMembers(
  workspaceId: WorkspaceId,
  listId: string | undefined,
  limit: number | undefined,
) {
  const tool = await externalTool(workspaceId);
  const page = await tool.client.members(tool.listId(listId), limit ?? PREVIEW_LIMIT.default, 0);
  return {
    total: page.total,
    sample: page.members.map(sampleOf),
    mapping: FIELD_MAPPING.map(({ remote, local }) => ({ remote, local })),
  };
}
