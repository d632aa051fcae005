import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT, sourceFiles } from "../helpers/source-files";

/**
 * An in-process cache is a bounded `lru-cache`, never a Map or Set that grows
 * with traffic. A Map or Set made empty at a module's top or as a class field
 * is long-lived state: each one here is listed with why it is not a cache.
 */

const LONG_LIVED = [
  /^(?:export )?(?:const|let) (\w+)(?::[^=]+)? = new (?:Map|Set)\b[^(]*\(\)/,
  /^\s+(?:private |protected |public |readonly )+(\w+)(?::[^=]+)? = new (?:Map|Set)\b[^(]*\(\)/,
];

const NOT_CACHES: Record<string, string> = {
  "services/content/event-streams.ts:open": "the visitors' open event streams, each removed as it closes",
  "services/webhooks/dispatcher.ts:inFlight": "requests in flight, each removed as it ends",
  "services/webhooks/dispatcher.ts:load": "the in-flight count of each endpoint being delivered to",
  "services/webhooks/dispatcher.ts:failing": "endpoints backing off now, each removed as it recovers",
  "services/webhooks/dispatcher.ts:timers": "pending retries, each removed as it fires",
  "services/webhooks/dispatcher.ts:active": "deliveries running, awaited at stop",
  "lib/embedded-channel.ts:subscribers": "the channel's subscriptions, one per subscribed handler",
  "lib/embedded-channel.ts:inFlight": "messages being handled, awaited at stop",
  "lib/outbox.ts:relays": "one relay per broker of the process",
  "lib/refused-origins.ts:pending": "refusals counted until the next flush writes them",
  "lib/rate-limit.ts:limiters": "one per limit the code declares; dropping one would forget its counts",
  "lib/versioned-cache.ts:probeStatements": "one statement per cached area the code declares",
};

test("long-lived Maps and Sets are state, not caches: caches are bounded LRUCaches", () => {
  const longLived = ["services", "mixins", "lib"]
    .flatMap((dir) => sourceFiles(dir))
    .flatMap((file) =>
      readFileSync(path.join(ROOT, file), "utf8")
        .split("\n")
        .flatMap((line) => {
          const name = LONG_LIVED.map((pattern) => pattern.exec(line)?.[1]).find(Boolean);
          return name ? [`${file.split(path.sep).join("/")}:${name}`] : [];
        }),
    );
  expect(longLived.sort()).toEqual(Object.keys(NOT_CACHES).sort());
});
