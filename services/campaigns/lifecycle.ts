import type { CampaignStatus } from "./campaigns.schemas";

/**
 * A campaign's lifecycle (contract 9), pure: which moves are allowed. Draft
 * → scheduled (a future `scheduledAt`), scheduled → draft, draft, scheduled
 * or paused → active, active → paused, active or paused → completed (live
 * enrollments exit), any but active → archived (final).
 */
const MOVES: Record<CampaignStatus, CampaignStatus[]> = {
  draft: ["scheduled", "active", "archived"],
  scheduled: ["draft", "active", "archived"],
  active: ["paused", "completed"],
  paused: ["active", "completed", "archived"],
  completed: ["archived"],
  archived: [],
};

/** Why `from` cannot move to `to` (the INVALID_STATE message), or null when it can. */
export function transitionProblem(
  from: CampaignStatus,
  to: CampaignStatus,
  scheduledAt: Date | null,
  now: Date,
): string | null {
  if (!MOVES[from].includes(to)) return `A campaign that is ${from} cannot become ${to}`;
  if (to === "scheduled" && (!scheduledAt || scheduledAt <= now))
    return "A campaign is scheduled for a future scheduledAt";
  return null;
}
