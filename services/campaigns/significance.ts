import { cumulativeStdNormalProbability } from "simple-statistics";

/**
 * The A/B significance test: a two-sided two-proportion z-test of the
 * leading variant against the runner-up on the test's metric. Pure.
 */

export interface VariantFigures {
  id: string;
  /** Contacts the rate is over (sent for open/click, enrolled for goal). */
  trials: number;
  /** Contacts that did it (opened, clicked, reached the goal). */
  successes: number;
}

export interface Significance {
  method: "two-proportion z-test";
  leader: string | null;
  runnerUp: string | null;
  z: number | null;
  pValue: number | null;
  /** 1 − pValue: how sure the leader is better than the runner-up. */
  confidence: number | null;
}

export const rate = (v: VariantFigures) => (v.trials ? v.successes / v.trials : 0);

export function twoProportionTest(variants: VariantFigures[]): Significance {
  const ranked = [...variants].sort((a, b) => rate(b) - rate(a) || b.trials - a.trials);
  const [leader, runnerUp] = ranked;
  const empty = { method: "two-proportion z-test" as const, z: null, pValue: null, confidence: null };
  if (!leader || !runnerUp || !leader.trials || !runnerUp.trials)
    return { ...empty, leader: leader?.id ?? null, runnerUp: runnerUp?.id ?? null };
  const pooled = (leader.successes + runnerUp.successes) / (leader.trials + runnerUp.trials);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / leader.trials + 1 / runnerUp.trials));
  if (se === 0) return { ...empty, leader: leader.id, runnerUp: runnerUp.id, z: 0, pValue: 1, confidence: 0 };
  const z = (rate(leader) - rate(runnerUp)) / se;
  const pValue = Math.min(1, 2 * (1 - cumulativeStdNormalProbability(Math.abs(z))));
  return {
    method: "two-proportion z-test",
    leader: leader.id,
    runnerUp: runnerUp.id,
    z,
    pValue,
    confidence: 1 - pValue,
  };
}

/**
 * Whether the test names a winner by itself: every variant has at least
 * `minSample` trials and the leader's confidence reaches `confidence`.
 */
export function autoWinner(
  variants: VariantFigures[],
  rule: { minSample: number; confidence: number },
): string | null {
  if (variants.some((v) => v.trials < rule.minSample)) return null;
  const test = twoProportionTest(variants);
  return test.confidence !== null && test.confidence >= rule.confidence ? test.leader : null;
}
