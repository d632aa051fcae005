import { config } from "./config";
import { QUEUE_OWNERS, QUEUE_STATS_EVERY_MS } from "./queue-stats";
import { Poller, type PollerOptions } from "./worker";

/**
 * The one registry of periodic steps: what each service runs on its own
 * clock (mixins/background.ts, lib/worker.ts) and what `GET /api/cron/tick`
 * runs once, in this order, on whichever node holds the owning service. A
 * static list, so the cron service knows every step even when their services
 * run on other nodes; a service cannot run a periodic step that is not here.
 */
export interface PeriodicStep {
  /** `<service>.<action>`: the owner's internal action, one pass of the step. */
  action: string;
  /** How often the owner passes on its own (read when it starts). */
  everyMs: () => number;
  /**
   * `timer`: the runtime calls the action every `everyMs`. `queue`: the owner's
   * poller (woken by writes, draining until a pass finds nothing) falls back to
   * `everyMs`; the action is the tick's single pass.
   */
  runs: "timer" | "queue";
}

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
/** A chain retry is due at most this late: a pass every second or, when the first delay is shorter, at it. */
const CHAIN_RETRY_PASS_MS = () => Math.max(50, Math.min(1000, config().chainRetryDelaysMs[0] ?? 1000));

export const PERIODIC_STEPS: readonly PeriodicStep[] = [
  { action: "webhooks.dispatchDue", everyMs: () => config().webhookPollMs, runs: "queue" },
  { action: "webhooks.pruneReplays", everyMs: () => MINUTE_MS, runs: "timer" },
  { action: "messages.processDue", everyMs: () => config().messagePollMs, runs: "queue" },
  { action: "campaigns.processDue", everyMs: () => config().campaignPollMs, runs: "queue" },
  // Events whose chain failed after they were stored, run again at their due time.
  { action: "events.retryChains", everyMs: CHAIN_RETRY_PASS_MS, runs: "timer" },
  { action: "crm.notifyDueTasks", everyMs: () => MINUTE_MS, runs: "timer" },
  // Decay first: the score segments it moves are current before time-relative segments refresh.
  { action: "scoring.applyDecay", everyMs: () => MINUTE_MS, runs: "timer" },
  // Each minute, or at the refresh period when that is shorter (never below a second).
  {
    action: "segments.refreshTimeBased",
    everyMs: () => Math.min(MINUTE_MS, Math.max(1000, config().segmentTimeRefreshMs)),
    runs: "timer",
  },
  { action: "jobs.sweep", everyMs: () => MINUTE_MS, runs: "timer" },
  // Schedules are due on whole minutes: a pass every 15 s keeps a delivery at most that late.
  { action: "reports.runDueSchedules", everyMs: () => 15_000, runs: "timer" },
  // The inbox: snoozed threads wake, waiting threads go to members with room, unanswered ones move on.
  { action: "inbox.wakeSnoozed", everyMs: () => config().inboxPollMs, runs: "timer" },
  { action: "inbox.assignWaiting", everyMs: () => config().inboxPollMs, runs: "timer" },
  { action: "inbox.reassignUnanswered", everyMs: () => config().inboxPollMs, runs: "timer" },
  // Deleted messages' attachment files, out of storage (privacy: they go with their message).
  { action: "inbox.sweepAttachmentRemovals", everyMs: () => config().inboxPollMs, runs: "timer" },
  // The rollup deltas the facts' triggers append, folded into the rollups (readers sum both meanwhile).
  { action: "analytics.foldRollups", everyMs: () => config().analyticsFoldMs, runs: "timer" },
  { action: "messages.sweepProviderCallbacks", everyMs: () => HOUR_MS, runs: "timer" },
  { action: "providers.sweepEventLog", everyMs: () => HOUR_MS, runs: "timer" },
  // Inbound messages the webhooks accepted, filed (woken by each webhook; the poll takes over expired leases).
  { action: "providers.fileInbound", everyMs: () => SECOND_MS, runs: "queue" },
  { action: "providers.sweepFiledInbound", everyMs: () => HOUR_MS, runs: "timer" },
  { action: "auth.pruneRevokedSessions", everyMs: () => HOUR_MS, runs: "timer" },
  // Each workspace's retention purge starts once per UTC day, at a pass with room for it (a few at once per process).
  { action: "retention.runDaily", everyMs: () => 5 * MINUTE_MS, runs: "timer" },
  // The durable queues' figures (lib/queue-stats.ts), each from its owner, into the Prometheus gauges.
  ...QUEUE_OWNERS.map((service): PeriodicStep => ({
    action: `${service}.queueStats`,
    everyMs: () => QUEUE_STATS_EVERY_MS,
    runs: "timer",
  })),
];

/** The service that owns a step. */
export function ownerOf(step: PeriodicStep): string {
  return step.action.split(".")[0];
}

/** A registered step by its action; throws for one not registered (a loop outside the registry is a bug). */
export function periodicStep(action: string): PeriodicStep {
  const step = PERIODIC_STEPS.find((s) => s.action === action);
  if (!step) throw new Error(`'${action}' is not a registered periodic step (lib/periodic-steps.ts)`);
  return step;
}

/** The poller of a registered step: named for it, passing every `everyMs` at least. */
export function stepPoller(action: string, opts: Omit<PollerOptions, "name" | "intervalMs">): Poller {
  return new Poller({ ...opts, name: action, intervalMs: periodicStep(action).everyMs() });
}
