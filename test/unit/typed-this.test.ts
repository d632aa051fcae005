import {
  defineAction,
  defineMixin,
  defineService,
  type ServiceSettings,
  type ServiceThis,
} from "../../lib/define-service";
import type { CampaignsService } from "../../services/campaigns/campaigns.this";
import type { MessagesService } from "../../services/messages/messages.service";

/*
 * `this` in a service is what the service declares. `npm run typecheck`
 * compiles this file: each `@ts-expect-error` below fails it when the line
 * it marks compiles, as any name did through Moleculer's own types.
 */

type Counter = ServiceThis<
  { count: number; wake(work: "all" | "steps"): void },
  ServiceSettings & { step: number }
>;

const counter = defineService<Counter>({
  name: "counter",
  settings: {
    rest: "/",
    step: 2,
    // @ts-expect-error a setting the service's type does not declare
    stpe: 3,
  },

  actions: {
    bump: defineAction({
      handler(this: Counter) {
        this.wake("steps");
        // @ts-expect-error a misspelt method
        this.wak("steps");
        // @ts-expect-error a value the method does not take
        this.wake("step");
        return this.count;
      },
    }),

    read: defineAction({
      handler() {
        this.logger.debug("read");
        // @ts-expect-error a service that declares no settings has Moleculer's and `rest` only
        void this.settings.step;
        // @ts-expect-error an action that names no service type sees Moleculer's members only
        return this.count;
      },
    }),
  },

  methods: {
    wake(work) {
      if (work === "all") this.count += this.settings.step;
      // @ts-expect-error a misspelt setting (Moleculer's own settings type takes any name)
      this.count += this.settings.stpe;
    },
    // @ts-expect-error a method the service's type does not declare
    rest() {},
  },

  created() {
    this.count = 0;
    // @ts-expect-error misspelt state
    this.cuont = 0;
  },
});

const counterPart = defineMixin<Counter>({
  started() {
    this.wake("all");
    // @ts-expect-error another service's state
    this.dispatcher.start();
  },
});

/** The real services' types hold the same way. */
export function wakeBoth(messages: MessagesService, campaigns: CampaignsService): void {
  messages.wake();
  campaigns.wake("steps");
  // @ts-expect-error a misspelt work kind
  campaigns.wake("step");
  // @ts-expect-error a method of another service
  messages.findWork();
}

test("typed services are still plain Moleculer schemas", () => {
  expect(counter.name).toBe("counter");
  expect(Object.keys(counter.actions ?? {})).toEqual(["bump", "read"]);
  expect(typeof counterPart.started).toBe("function");
});
