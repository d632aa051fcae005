import { settingsWithSecrets } from "./workspaces.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The workspaces area's read for a process that uses a secret setting (the
 * translation API's and the external tool's keys): one top-level settings
 * key with its secret opened here, in the caller's own process, so the key
 * is never in a broker message. Null when the workspace or the key is unset.
 */
export async function openedSetting(
  workspaceId: WorkspaceId,
  key: string,
): Promise<Record<string, unknown> | null> {
  const settings = await settingsWithSecrets(workspaceId);
  const value = settings?.[key];
  return value && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}
