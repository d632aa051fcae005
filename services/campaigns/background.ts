import { config } from "../../lib/config";
import { defineMixin, type ServiceThis } from "../../lib/define-service";
import {
  DOMAIN_EVENTS_CHANNEL,
  factsOf,
  handleFacts,
  type DomainEnvelope,
  type DomainEvent,
} from "../../lib/domain-events";
import { stepPoller } from "../../lib/periodic-steps";
import type { Poller } from "../../lib/worker";
import { decideSplits } from "./ab-tests";
import * as repo from "./campaigns.repo";
import * as enrollmentsRepo from "./enrollments.repo";
import { sendBroadcast } from "./broadcast";
import { claimStalledBroadcasts } from "./broadcasts.repo";
import { advance, closeWebhookSender, HeldSaves } from "./runner";
import { liveSegmentTriggers, readSegmentLog } from "./segment-log.repo";
import { contactKey, enrollByAnniversaries, enrollByChanges, enrollByContactFact } from "./feed-triggers";

/** Enrollments one pass of the runner claims. */
export const PASS_SIZE = 100;

/** How often the A/B splits that decide their own winner are tested and contacts' dates looked at. */
const MINUTE_MS = 60_000;

/**
 * The campaigns service's background work, mixed into `campaigns`: every
 * `CAMPAIGN_POLL_MS` (and on `wake()` after a write that made work), one
 * drain at a time per process (a poller of lib/worker.ts): scheduled
 * campaigns due become active, stopped broadcasts send on, the membership
 * log enrolls by segment triggers, A/B splits that ask for it get their
 * winner and contacts' dates enroll by `date_anniversary` triggers (each
 * minute), and due enrollment steps run until none is left.
 */
/** What the background work adds to the campaigns service's `this`: its state and methods. */
export interface CampaignsBackground {
  /** The drain of due steps (and, when `lookForWork`, of the other work). */
  stepQueue: Poller;
  /** The next drain looks for scheduled campaigns, stopped broadcasts, the membership log and the minute's work. */
  lookForWork: boolean;
  /** When the minute's work (A/B splits, contacts' dates) last ran (epoch ms). */
  minuteWorkAt: number;
  resumeBroadcasts(): Promise<number>;
  enrollFromSegmentLog(): Promise<number>;
  pass(limit: number): Promise<{ advanced: number; failed: number }>;
  stopBackground(): Promise<void>;
  wake(work?: "all" | "steps"): void;
  findWork(
    minuteWork?: "when due" | "now",
  ): Promise<{ activated: number; resumedBroadcasts: number; decidedAbTests: number }>;
}

export const backgroundWork = defineMixin<ServiceThis<CampaignsBackground>>({
  methods: {
    /** Broadcasts whose send stopped (a process gone, a pause lifted) send on from where their messages end. */
    async resumeBroadcasts(): Promise<number> {
      const stalled = await claimStalledBroadcasts();
      for (const broadcast of stalled) await sendBroadcast(this.broker, this.logger, broadcast, null);
      return stalled.length;
    },

    /** Segment triggers: enroll by the membership log's entries and exits since the last read. */
    async enrollFromSegmentLog(): Promise<number> {
      const triggers = await liveSegmentTriggers();
      let enrolled = 0;
      await readSegmentLog([...new Set(triggers.map((t) => t.segment_id))], async (changes) => {
        enrolled += await enrollByChanges(changes, triggers);
      });
      return enrolled;
    },

    /** One pass: claim due enrollments and advance each as far as it goes now. */
    async pass(limit: number): Promise<{ advanced: number; failed: number }> {
      // The higher-priority campaign's step goes first, so where two would send to one contact inside the
      // frequency cap, it takes the slot and the other's step skips or waits as its send node says.
      const claimed = (
        await enrollmentsRepo.claimDue(this.broker.nodeID, limit, config().campaignLeaseMs)
      ).sort((a, b) => b.priority - a.priority || a.created_at.getTime() - b.created_at.getTime());
      let advanced = 0;
      let failed = 0;
      const held = new HeldSaves();
      for (const enrollment of claimed) {
        try {
          if ((await advance(this.broker, enrollment, new Date(), held)) === "advanced") advanced += 1;
          else failed += 1;
        } catch (err) {
          // Its lease ends and it is taken again.
          this.logger.warn(`Enrollment ${enrollment.id} step failed`, err);
          failed += 1;
        }
      }
      const unsaved = held.size;
      try {
        await held.write();
      } catch (err) {
        // Their leases end and they are taken again, their steps repeated (harmless).
        this.logger.warn(`The steps of ${unsaved} enrollment(s) could not be saved`, err);
      }
      return { advanced, failed };
    },

    /** Stop the clock and wait for the pass under way (the service's own `stopped`, before its pool is released). */
    async stopBackground() {
      await this.stepQueue.stop();
      closeWebhookSender();
    },

    /**
     * Run passes until nothing is due (a wake during one runs another). A
     * wake for `steps` (an enrollment just made) runs passes only: the rest
     * (scheduled campaigns, stopped broadcasts, the membership log, the
     * minute's work) is looked for on the clock and after a status change,
     * not on every enrollment.
     */
    wake(work: "all" | "steps" = "all") {
      if (work === "all") this.lookForWork = true;
      this.stepQueue.wake();
    },

    /**
     * What makes due steps besides enrollments: scheduled campaigns, stopped
     * broadcasts, the membership log, and the minute's work (A/B splits,
     * contacts' dates) when a minute has passed since it last ran, or `now`.
     */
    async findWork(minuteWork: "when due" | "now" = "when due") {
      const activated = await repo.activateScheduled();
      const resumedBroadcasts = await this.resumeBroadcasts();
      await this.enrollFromSegmentLog();
      let decidedAbTests = 0;
      if (minuteWork === "now" || Date.now() - this.minuteWorkAt >= MINUTE_MS) {
        this.minuteWorkAt = Date.now();
        decidedAbTests = await decideSplits();
        await enrollByAnniversaries();
      }
      return { activated, resumedBroadcasts, decidedAbTests };
    },
  },

  channels: {
    /**
     * Contact triggers, from the durable domain-event channel (its own
     * group): each `contact.created` / `contact.updated` fact enrolls by the
     * matching triggers, once per fact (its id is the enrollment's cause).
     * An envelope's facts of one contact are handled in staging order.
     */
    [DOMAIN_EVENTS_CHANNEL]: {
      group: "campaigns",
      context: false,
      maxInFlight: 2,
      async handler(payload: DomainEnvelope | DomainEvent) {
        let enrolled = 0;
        try {
          await handleFacts(factsOf(payload), async (fact) => (enrolled += await enrollByContactFact(fact)), {
            concurrency: 10,
            keyOf: contactKey,
          });
        } finally {
          if (enrolled > 0) this.wake("steps");
        }
      },
    },
  },

  created() {
    this.minuteWorkAt = 0;
    this.lookForWork = false;
    this.stepQueue = stepPoller("campaigns.processDue", {
      logger: this.logger,
      metrics: this.broker.metrics,
      // The clock looks for every kind of work, not only due steps.
      onInterval: () => {
        this.lookForWork = true;
      },
      pass: async () => {
        if (this.lookForWork) {
          this.lookForWork = false;
          await this.findWork();
        }
        const { advanced, failed } = await this.pass(PASS_SIZE);
        return advanced + failed > 0;
      },
    });
  },

  started() {
    this.stepQueue.start();
  },
});
