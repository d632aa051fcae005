import type { ServiceThis } from "../../lib/define-service";
import type { AppContext } from "../../lib/moleculer-types";
import type { CampaignsBackground } from "./background";
import type { CampaignStatus } from "./campaigns.schemas";

/** A campaign as a lifecycle move reads it. */
export interface MovedCampaign {
  id: string;
  type: "workflow" | "broadcast";
  status: CampaignStatus;
  publishedVersion: number | null;
  workflow: unknown;
}

/** The campaigns service's `this`: its background work (background.ts) and its lifecycle move. */
export type CampaignsService = ServiceThis<
  CampaignsBackground & {
    moveTo(
      ctx: AppContext,
      campaign: MovedCampaign,
      to: CampaignStatus,
      scheduledAt: Date | null,
    ): Promise<void>;
  }
>;
