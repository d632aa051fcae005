import { startDispatchHarness, type DispatchHarness } from "./dispatch-harness";
import { waitFor } from "../../helpers/wait";

/**
 * One dispatcher with 6 slots, 2 per endpoint, a 10 s timeout: a send unanswered after 500 ms (a 20th of the
 * timeout) gives its slot back and waits on its socket alone, still counted by its endpoint's cap. So endpoints
 * that hang hold sockets, not the slots other endpoints need: whether they hang from the start (slow start keeps
 * each at one request) or turn to hanging while borrowing (they keep their own cap's requests, not the lent slots).
 */
let h: DispatchHarness;
/** The turncoat answers its first requests in 20 ms, then hangs. */
const ANSWERED_BEFORE_HANGING = 12;
let turncoatRequests = 0;

beforeAll(async () => {
  h = await startDispatchHarness((req) => {
    if (req.path === "/turncoat")
      return ++turncoatRequests > ANSWERED_BEFORE_HANGING ? "hang" : { status: 200, afterMs: 20 };
    if (req.path.startsWith("/hang/")) return "hang";
    return { status: 200, afterMs: 200 };
  });
});
afterAll(() => h.stop());

const endpoint = (path: string) => h.endpoint(path);
const queue = (endpointId: string, n: number) => h.queue(endpointId, n);
const hits = (...paths: string[]) => h.receiver.received.filter((r) => paths.includes(r.path));

/** The most requests to `paths` that arrived within any `windowMs` (each is answered `200` ms after it arrives). */
function mostAtOnce(windowMs: number, ...paths: string[]): number {
  const at = hits(...paths).map((r) => r.at);
  return Math.max(...at.map((t) => at.filter((u) => u <= t && u > t - windowMs).length));
}

test("an endpoint that starts hanging while borrowing gives the borrowed slots back; other endpoints get their full caps", async () => {
  const turncoat = await endpoint("/turncoat");
  await queue(turncoat, 40);
  // Fast answers: it borrows, 4 in flight, and the last 4 it was sent hang.
  await waitFor(
    () => hits("/turncoat").length === ANSWERED_BEFORE_HANGING + 4,
    5000,
    "the turncoat to hang with 4 in flight",
  );
  expect(Math.max(...hits("/turncoat").map((r) => r.concurrent))).toBe(4);

  // Two endpoints answering in 200 ms (fast: they may borrow too); only 2 slots would be free had the turncoat's
  // hanging sends kept theirs.
  const [first, second] = [await endpoint("/first"), await endpoint("/second")];
  await queue(first, 8);
  await queue(second, 8);
  await waitFor(() => hits("/first", "/second").length === 16, 10_000, "both endpoints' deliveries");
  // More than the 2 slots left if the turncoat's sends kept theirs.
  expect(mostAtOnce(150, "/first", "/second")).toBeGreaterThan(2);
  // The hanging endpoint got nothing more: its own cap is still taken by requests waiting for the timeout.
  expect(hits("/turncoat")).toHaveLength(ANSWERED_BEFORE_HANGING + 4);
});

test("more endpoints hanging than there are slots: each holds one request, and a healthy endpoint's deliveries all go out", async () => {
  const hanging = await Promise.all(Array.from({ length: 8 }, (_, i) => endpoint(`/hang/${i}`)));
  for (const id of hanging) await queue(id, 5);
  const healthy = await endpoint("/healthy");
  await queue(healthy, 20);
  await waitFor(
    () => hits("/healthy").length === 20,
    8000,
    "the healthy endpoint's deliveries, before any hanging request times out",
  );
  const hangingHits = h.receiver.received.filter((r) => r.path.startsWith("/hang/"));
  expect(hangingHits).toHaveLength(8);
  expect(new Set(hangingHits.map((r) => r.path)).size).toBe(8);
});
