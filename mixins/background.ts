import { acquireDatabase, releaseDatabase } from "../lib/database";
import { defineMixin, type ServiceThis } from "../lib/define-service";
import { ownerOf, PERIODIC_STEPS, stepPoller } from "../lib/periodic-steps";
import type { Poller } from "../lib/worker";

/** What the mixin adds to a service's `this`: the pollers of its timer steps. */
export interface BackgroundState {
  timerSteps: Poller[];
}

/**
 * A service's timer steps (lib/periodic-steps.ts) on the background runtime:
 * each of its registered `timer` steps calls its own action every `everyMs`
 * from `started` until `stopped`, which waits for the passes in flight. The
 * services that own such steps take this mixin; their `queue` steps are the
 * pollers they build with `stepPoller`. Every step reads the database, so
 * the mixin holds the pool itself: Moleculer runs mixins' `started` from the
 * last listed, so a `DatabaseMixin` listed before this one has not yet
 * acquired it when the first pass could run.
 */
export const BackgroundMixin = defineMixin<ServiceThis<BackgroundState>>({
  async started() {
    await acquireDatabase();
    this.timerSteps = PERIODIC_STEPS.filter(
      (step) => step.runs === "timer" && ownerOf(step) === this.name,
    ).map((step) => {
      const action = step.action.slice(this.name.length + 1);
      const poller = stepPoller(step.action, {
        logger: this.logger,
        metrics: this.broker.metrics,
        pass: async () => {
          await this.actions[action]({});
          return false;
        },
      });
      poller.start();
      return poller;
    });
  },

  async stopped() {
    await Promise.all(this.timerSteps.map((poller) => poller.stop()));
    await releaseDatabase();
  },
});
