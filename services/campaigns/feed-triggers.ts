import type { DomainEvent } from "../../lib/domain-events";
import * as triggersRepo from "./triggers.repo";
import * as enrollRepo from "./enroll.repo";
import { liveState } from "./live-state";
import { anniversaryField, contactChangeMatches } from "./triggers";
import type { LogChange, SegmentTrigger } from "./segment-log.repo";

/**
 * Triggers fed by changes rather than recorded events: segment entries and
 * exits (the membership log), contact writes (domain facts) and the days
 * of contacts' dates. Each cause enrolls once per campaign: it is the
 * enrollment's `source_key`.
 */

/**
 * Enroll by segment entries and exits: each watching trigger takes the
 * changes of its segment and kind, a thousand contacts per statement,
 * whether the events chain or the background log reader sees them first.
 * Answers the enrollments made.
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
      const rows = await enrollRepo.enroll(trigger.workspace_id, {
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

const CONTACT_TRIGGERS = {
  "contact.created": "contact_created",
  "contact.updated": "contact_updated",
} as const;

/** The contact a fact is about, as the key that keeps one contact's facts in order (lib/domain-events.ts handleFacts). */
export function contactKey(fact: DomainEvent): string | undefined {
  const contactId = fact.data.contactId;
  return typeof contactId === "string" ? `${fact.workspaceId}:${contactId}` : undefined;
}

/** Enroll by the contact triggers a `contact.created` / `contact.updated` fact matches; answers the enrollments made. */
export async function enrollByContactFact(fact: DomainEvent): Promise<number> {
  const type = CONTACT_TRIGGERS[fact.type as keyof typeof CONTACT_TRIGGERS];
  const contactId = fact.data.contactId;
  if (!type || typeof contactId !== "string") return 0;
  let enrolled = 0;
  const { triggers } = await liveState.get(fact.workspaceId);
  for (const trigger of triggers.filter((t) => t.type === type)) {
    const watched = (trigger.config as { fields?: string[] }).fields;
    if (type === "contact_updated" && !contactChangeMatches(watched, fact.changedFields)) continue;
    const rows = await enrollRepo.enroll(fact.workspaceId, {
      campaignId: trigger.campaign_id,
      version: trigger.published_version,
      contactIds: [contactId],
      sourceKeys: [`fact:${fact.id}`],
      triggerId: trigger.id,
      event: null,
      reentry: trigger.reentry,
      cooldownHours: trigger.cooldown_hours,
    });
    enrolled += rows.length;
  }
  return enrolled;
}

/** Every `date_anniversary` trigger's pass (enrollRepo.enrollAnniversaries); answers the enrollments made. */
export async function enrollByAnniversaries(): Promise<number> {
  let enrolled = 0;
  for (const trigger of await triggersRepo.liveTriggers(null, ["date_anniversary"])) {
    const config = trigger.config as { field: string; offsetDays?: number; time: string };
    enrolled += await enrollRepo.enrollAnniversaries(
      trigger,
      (binds) => anniversaryField(config.field, binds) ?? "NULL::timestamptz",
      config.offsetDays ?? 0,
      config.time,
    );
  }
  return enrolled;
}
