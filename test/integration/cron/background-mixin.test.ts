import { ServiceBroker } from "moleculer";
import { QueryTypes } from "sequelize";
import { resetConfig } from "../../../lib/config";
import { database } from "../../../lib/database";
import { BackgroundMixin } from "../../../mixins/background";
import { DatabaseMixin } from "../../../mixins/database.mixin";
import { createTestDatabase } from "../../helpers/database";
import { waitFor } from "../../helpers/wait";

/**
 * A timer step's pass reads the database from its first run to the stop that
 * waits for it, whatever the order of the service's mixins: Moleculer starts
 * mixins from the last listed and stops them from the first.
 */
const settings = ["DATABASE_URL", "EVENT_CHAIN_RETRY_DELAYS_MS"] as const;
const before = Object.fromEntries(settings.map((key) => [key, process.env[key]]));
let drop: () => Promise<void>;

beforeAll(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  // `events.retryChains` is a timer step passing at the first retry delay (at most each second).
  Object.assign(process.env, { DATABASE_URL: db.url, EVENT_CHAIN_RETRY_DELAYS_MS: "50" });
  resetConfig();
});

afterAll(async () => {
  for (const key of settings) {
    if (before[key] === undefined) delete process.env[key];
    else process.env[key] = before[key];
  }
  resetConfig();
  await drop();
});

test.each([
  ["the mixin alone", [BackgroundMixin]],
  ["after DatabaseMixin", [DatabaseMixin, BackgroundMixin]],
])("%s: every pass reaches the database, the one in flight at the stop included", async (_, mixins) => {
  const passes: Array<"started" | "done" | string> = [];
  const broker = new ServiceBroker({ logger: false });
  broker.createService({
    name: "events",
    mixins,
    actions: {
      async retryChains() {
        passes.push("started");
        try {
          const sequelize = await database();
          await sequelize.query("SELECT pg_sleep(0.2)", { type: QueryTypes.SELECT });
          passes.push("done");
        } catch (err) {
          passes.push(`failed: ${(err as Error).message}`);
        }
      },
    },
  });
  await broker.start();
  await waitFor(() => passes.includes("done"), 10_000, "a first pass");
  await waitFor(() => passes[passes.length - 1] === "started", 10_000, "a pass in flight");
  await broker.stop();
  expect(passes.filter((p) => p !== "started" && p !== "done")).toEqual([]);
  expect(passes[passes.length - 1]).toBe("done");
});
