import { fieldError } from "../../../lib/errors";
import { resolveTarget, TargetRefused } from "../../webhooks/url-guard";
import { openedSetting } from "../../workspaces/for-use";
import { ExternalToolClient } from "./client";
import type { WorkspaceId } from "../../../lib/tenancy";

/**
 * The workspace's `settings.externaltool {baseUrl, apiKey*, listId}`
 * (contract-messaging 13, 15), its key opened in this process: a client
 * for it and the list a call works on. Unset: 400 naming the setting. The
 * address passes the outbound webhooks' guard (in production, no private,
 * loopback, link-local or metadata address), checked as each route call starts.
 */
export async function externalTool(workspaceId: WorkspaceId) {
  const setting = await openedSetting(workspaceId, "externaltool");
  const baseUrl = typeof setting?.baseUrl === "string" ? setting.baseUrl : null;
  const apiKey = typeof setting?.apiKey === "string" ? setting.apiKey : null;
  if (!baseUrl || !apiKey)
    throw fieldError(
      "settings.externaltool",
      "is not set: add {baseUrl, apiKey, listId} of the external tool to the workspace settings",
    );
  try {
    await resolveTarget(baseUrl);
  } catch (err) {
    if (err instanceof TargetRefused)
      throw fieldError("settings.externaltool.baseUrl", err.message.replace(/^url /, ""));
    throw err;
  }
  const defaultList = typeof setting?.listId === "string" ? setting.listId : null;
  return {
    client: new ExternalToolClient({ baseUrl, apiKey }),
    /** The list named by the call, else the setting's; 400 naming `listId` when neither. */
    listId(given: string | undefined): string {
      const listId = given ?? defaultList;
      if (!listId) throw fieldError("listId", "is needed: pass it or set settings.externaltool.listId");
      return listId;
    },
  };
}
