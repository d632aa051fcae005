import DefaultSequencer from "@jest/test-sequencer";

/**
 * The suites that take minutes start first, so the two workers end together:
 * a clean clone (CI) has no timings cached, and jest then orders by file size,
 * which started the three-minute fuzz suite half-way through the run. Durations
 * are CI's of 2026-11-28; the rest keep jest's order.
 */
const SLOWEST = [
  "integration/gateway/fuzz.test.ts", // 192 s
  "integration/cluster/faults.test.ts", // 180 s
  "integration/operators/embedded.test.ts", // 78 s
  "integration/operators/readme-first-run.test.ts", // 74 s
  "integration/operators/setup.test.ts", // 36 s
];

const rank = (test) => {
  const index = SLOWEST.findIndex((suffix) => test.path.endsWith(suffix));
  return index === -1 ? SLOWEST.length : index;
};

export default class SlowestFirst extends DefaultSequencer.default {
  async sort(tests) {
    return [...(await super.sort(tests))].sort((a, b) => rank(a) - rank(b));
  }
}
