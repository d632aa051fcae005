import * as repo from "./campaigns.repo";
import type { LogChange, SegmentTrigger } from "./segment-log.repo";

/**
 * Enroll by segment entries and exits: each watching trigger takes the
 * changes of its segment and kind, a thousand contacts per statement. A
 * change enrolls once per campaign (its log row is the enrollment's
 * `source_key`), whether the events chain or the background reader sees it
 * first. Answers the enrollments made.
 */
export async function enrollByChanges(changes: LogChange[], triggers: SegmentTrigger[]): Promise<number> {
  let enrolled = 0;
  for (const trigger of triggers) {
    const kind = trigger.type === "segment_entered" ? "entered" : "exited";
    const mine = changes.filter(
      (c) =>
        c.segment_id === trigger.segment_id && c.change === kind && c.workspace_id === trigger.workspace_id,
    );
    for (let i = 0; i < mine.length; i += 1000) {
      const chunk = mine.slice(i, i + 1000);
      const rows = await repo.enroll(trigger.workspace_id, {
        campaignId: trigger.campaign_id,
        version: trigger.published_version,
        contactIds: chunk.map((c) => c.contact_id),
        sourceKeys: chunk.map((c) => `segment-log:${c.id}`),
        triggerId: trigger.id,
        event: null,
        reentry: trigger.reentry,
        cooldownHours: trigger.cooldown_hours,
      });
      enrolled += rows.length;
    }
  }
  return enrolled;
}
