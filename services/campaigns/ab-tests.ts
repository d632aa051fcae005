import * as ab from "./ab.repo";
import { autoWinner, rate, twoProportionTest, type VariantFigures } from "./significance";
import type { Workflow, WorkflowNode } from "./workflow";

/**
 * A/B tests of campaigns (an `ab_split` node) and of templates, as the API
 * answers them, each with its significance test; and the test deciding
 * winners where a split asks it to (`autoWinner`).
 */

type Metric = "open" | "click" | "goal";
interface SplitConfig {
  variants: Array<{ id: string; weight: number }>;
  metric: Metric;
  autoWinner?: { minSample: number; confidence: number };
}

const ZERO = { enrolled: 0, sent: 0, opened: 0, clicked: 0, goals: 0 };

/** What the metric counts: its successes over its trials (sent messages; enrolled contacts for goals). */
function figures(metric: Metric, id: string, c: Omit<ab.VariantCounts, "variant">): VariantFigures {
  const successes = metric === "open" ? c.opened : metric === "click" ? c.clicked : c.goals;
  return { id, trials: metric === "goal" ? c.enrolled : c.sent, successes };
}

export const splitsOf = (workflow: Workflow): WorkflowNode[] =>
  workflow.nodes.filter((n) => n.type === "ab_split");

/** One split's test: its variants with their figures and rate, status, winner and significance. */
export async function splitTest(campaignId: string, node: WorkflowNode, winners: ab.WinnerRow[]) {
  const config = node.config as unknown as SplitConfig;
  const counts = await ab.variantCounts(campaignId, node.id);
  const chosen = winners.find((w) => w.node_id === node.id);
  const variants = config.variants.map((v) => {
    const c = counts.find((x) => x.variant === v.id) ?? { variant: v.id, ...ZERO };
    const { variant: _variant, ...numbers } = c;
    return { id: v.id, weight: v.weight, ...numbers, rate: rate(figures(config.metric, v.id, c)) };
  });
  return {
    nodeId: node.id,
    metric: config.metric,
    status: chosen ? ("decided" as const) : ("running" as const),
    winner: chosen?.winner ?? null,
    decidedBy: chosen?.decided_by ?? null,
    autoWinner: config.autoWinner ?? null,
    variants,
    significance: twoProportionTest(variants.map((v) => figures(config.metric, v.id, v))),
  };
}

/** A template's test (contract 2's figures) in the same shape, its trials being sends. */
export function templateTest(test: {
  templateId: string;
  metric: "open" | "click";
  winner: string | null;
  variants: Array<{ id: string; weight: number }>;
  stats: Array<{ id: string; sent: number; opened: number; clicked: number; rate: number }>;
}) {
  const variants = test.variants.map((v) => {
    const s = test.stats.find((x) => x.id === v.id) ?? { sent: 0, opened: 0, clicked: 0, rate: 0 };
    return { id: v.id, weight: v.weight, sent: s.sent, opened: s.opened, clicked: s.clicked, rate: s.rate };
  });
  return {
    kind: "template" as const,
    campaignId: null,
    nodeId: null,
    templateId: test.templateId,
    metric: test.metric,
    status: test.winner ? ("decided" as const) : ("running" as const),
    winner: test.winner,
    variants,
    significance: twoProportionTest(
      variants.map((v) => ({
        id: v.id,
        trials: v.sent,
        successes: test.metric === "click" ? v.clicked : v.opened,
      })),
    ),
  };
}

/** Name the winners the test has found in active campaigns' splits that ask for it; answers how many. */
export async function decideSplits(): Promise<number> {
  let decided = 0;
  for (const campaign of await ab.campaignsWithSplits()) {
    const chosen = await ab.winners(campaign.id);
    for (const node of splitsOf(campaign.workflow)) {
      const config = node.config as unknown as SplitConfig;
      if (!config.autoWinner || chosen.some((w) => w.node_id === node.id)) continue;
      const counts = await ab.variantCounts(campaign.id, node.id);
      const winner = autoWinner(
        config.variants.map((v) =>
          figures(config.metric, v.id, counts.find((c) => c.variant === v.id) ?? { variant: v.id, ...ZERO }),
        ),
        config.autoWinner,
      );
      if (winner) {
        await ab.setWinner(campaign.workspace_id, campaign.id, node.id, winner, "test");
        decided += 1;
      }
    }
  }
  return decided;
}
