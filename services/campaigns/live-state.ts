import { sqlProbe, VersionedCache } from "../../lib/versioned-cache";
import * as repo from "./campaigns.repo";

/**
 * A workspace's live campaigns as the events chain and the contact facts
 * need them: whether it has any active or paused one, and the active ones'
 * triggers that enroll by events, segment changes and contact writes;
 * at the version the chain probes with its other areas (a status or a
 * trigger that changed moves it), so most events ask nothing more.
 */
export const liveState = new VersionedCache<{
  live: boolean;
  triggers: Awaited<ReturnType<typeof repo.liveTriggers>>;
  goals: Set<string>;
  waits: Set<string>;
}>(
  sqlProbe(
    "campaigns",
    `SELECT c.workspace_id,
            count(*) FILTER (WHERE c.status IN ('active', 'paused')) || '/' || max(c.updated_at)::text || '/' ||
            COALESCE((SELECT count(*) || '/' || max(t.updated_at)::text
                        FROM campaign_triggers t WHERE t.workspace_id = c.workspace_id), '') AS version
       FROM campaigns c WHERE c.workspace_id = ANY($1::text[]) GROUP BY c.workspace_id`,
  ),
  async (workspaceId) => {
    const awaited = await repo.awaitedEventTypes(workspaceId);
    return {
      live: await repo.hasLiveCampaigns(workspaceId),
      triggers: await repo.liveTriggers(workspaceId, [
        "event",
        "form_submitted",
        "segment_entered",
        "segment_exited",
        "contact_created",
        "contact_updated",
      ]),
      goals: new Set(awaited.goals),
      waits: new Set(awaited.waits),
    };
  },
  { area: "campaigns" },
);
