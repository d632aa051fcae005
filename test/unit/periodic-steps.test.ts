import { readFileSync } from "node:fs";
import path from "node:path";
import type { ServiceSchema } from "moleculer";
import { ownerOf, PERIODIC_STEPS, periodicStep } from "../../lib/periodic-steps";
import { BackgroundMixin } from "../../mixins/background";
import { ROOT, sourceFiles } from "../helpers/source-files";

/** A schema with its mixins, depth first. */
function withMixins(schema: Partial<ServiceSchema>): Array<Partial<ServiceSchema>> {
  return [schema, ...((schema.mixins ?? []) as Array<Partial<ServiceSchema>>).flatMap(withMixins)];
}

async function schemaOf(service: string): Promise<Partial<ServiceSchema>> {
  const mod = (await import(path.join(ROOT, "services", service, `${service}.service.ts`))) as {
    default: Partial<ServiceSchema>;
  };
  return mod.default;
}

describe("periodic steps", () => {
  it("each names an action of its service, and each timer step's service runs them (BackgroundMixin)", async () => {
    for (const step of PERIODIC_STEPS) {
      const schemas = withMixins(await schemaOf(ownerOf(step)));
      const action = step.action.slice(ownerOf(step).length + 1);
      expect({ step: step.action, found: schemas.some((s) => s.actions && action in s.actions) }).toEqual({
        step: step.action,
        found: true,
      });
      if (step.runs === "timer")
        expect({ step: step.action, mixin: schemas.includes(BackgroundMixin) }).toEqual({
          step: step.action,
          mixin: true,
        });
      expect(step.everyMs()).toBeGreaterThan(0);
    }
    expect(new Set(PERIODIC_STEPS.map((s) => s.action)).size).toBe(PERIODIC_STEPS.length);
  });

  it("a poller for a step not registered (so not in the cron tick) cannot be made", () => {
    expect(() => periodicStep("messages.somethingElse")).toThrow(/not a registered periodic step/);
  });

  // The tick runs the registry (test/integration/cron): background work that bypasses it would be missed there.
  it("no background work runs on its own timer: only the runtime sets intervals and builds pollers", () => {
    const files = ["services", "mixins", "lib"].flatMap((dir) => sourceFiles(dir));
    const intervals = files.filter((f) => /\bsetInterval\(/.test(readFileSync(path.join(ROOT, f), "utf8")));
    // SSE heartbeats are per connection, not background steps; the embedded PostgreSQL's watchdog is a
    // script run in a process of its own (its polling for the server's exit is in a string).
    expect(intervals.sort()).toEqual([
      "lib/embedded-postgres.ts",
      "lib/worker.ts",
      "services/content/event-streams.ts",
    ]);
    const pollers = files.filter((f) => /\bnew Poller\(/.test(readFileSync(path.join(ROOT, f), "utf8")));
    // Registered steps (stepPoller) and the two loops of every process: the outbox relay and table statistics.
    expect(pollers.sort()).toEqual(["lib/outbox.ts", "lib/periodic-steps.ts", "lib/table-stats.ts"]);
  });
});
