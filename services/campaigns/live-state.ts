import { VersionedCache } from "../../lib/versioned-cache";
import * as repo from "./campaigns.repo";
import * as triggersRepo from "./triggers.repo";

/**
 * A workspace's live campaigns as the events chain and the contact facts
 * need them: whether it has any active or paused one, and the active ones'
 * triggers that enroll by events, segment changes and contact writes;
 * at the version the chain probes with its other areas (a status or a
 * trigger that changed moves it), so most events ask nothing more.
 */
export const liveState = new VersionedCache<{
  live: boolean;
  triggers: Awaited<ReturnType<typeof triggersRepo.liveTriggers>>;
  goals: Set<string>;
  waits: Set<string>;
}>(
  repo.liveStateProbe,
  async (workspaceId) => {
    const awaited = await repo.awaitedEventTypes(workspaceId);
    return {
      live: await repo.hasLiveCampaigns(workspaceId),
      triggers: await triggersRepo.liveTriggers(workspaceId, [
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
