import { Errors, ServiceBroker } from "moleculer";
import { randomHex } from "../../lib/crypto";
import { readRetry } from "../../lib/resilience";
import { waitFor } from "../helpers/wait";

/**
 * Per-action retries across nodes (Moleculer's Fake transporter, which
 * serialises every packet): a read declared with `readRetry()` that meets a
 * failing replica is answered by another; a write is not retried.
 */

const namespace = `retry-${randomHex(4)}`;
const broker = (nodeID: string) =>
  new ServiceBroker({
    namespace,
    nodeID,
    transporter: "Fake",
    logger: false,
    retryPolicy: { enabled: false },
  });

const calls: Record<string, number> = {};
/** A replica whose every call fails as a call to a node gone without a goodbye does. */
const replica = (nodeID: string, healthy: boolean) => {
  const b = broker(nodeID);
  const answer = (what: string) => () => {
    calls[`${what}@${nodeID}`] = (calls[`${what}@${nodeID}`] ?? 0) + 1;
    if (!healthy) throw new Errors.RequestTimeoutError({ action: what, nodeID });
    return nodeID;
  };
  b.createService({
    name: "store",
    actions: {
      read: { retryPolicy: readRetry(), handler: answer("read") },
      write: { handler: answer("write") },
    },
  });
  return b;
};

const caller = broker("caller");
const nodes = [replica("dead", false), replica("alive", true)];

beforeAll(async () => {
  await Promise.all([...nodes, caller].map((b) => b.start()));
  await waitFor(
    () =>
      (caller.registry.getServiceList({ onlyAvailable: true }) as unknown as Array<{ name: string }>).filter(
        (s) => s.name === "store",
      ).length === 2,
    5000,
    "both replicas seen",
  );
});
afterAll(() => Promise.all([...nodes, caller].map((b) => b.stop())));

test("a read that meets the failing replica is answered by the other one", async () => {
  const answers: unknown[] = [];
  for (let i = 0; i < 6; i++) answers.push(await caller.call("store.read"));
  expect(answers).toEqual(Array(6).fill("alive"));
  expect(calls["read@dead"]).toBeGreaterThan(0);
});

test("a write is not retried: the failing replica's error reaches the caller", async () => {
  const outcomes: string[] = [];
  for (let i = 0; i < 6; i++)
    outcomes.push(await caller.call("store.write").then(String, (err: Error) => err.name));
  expect(outcomes).toContain("RequestTimeoutError");
  expect(outcomes.filter((o) => o === "RequestTimeoutError")).toHaveLength(calls["write@dead"]);
});
