import fs from "node:fs";
import path from "node:path";
import { BUSINESS_METRICS } from "../../lib/business-metrics";
import { ROOT } from "../helpers/source-files";

/** docs/grafana-dashboard.json charts the business metrics (lib/business-metrics.ts) under their Prometheus names. */

interface Panel {
  title: string;
  targets: Array<{ expr: string }>;
}

const dashboard = JSON.parse(fs.readFileSync(path.join(ROOT, "docs/grafana-dashboard.json"), "utf8")) as {
  panels: Panel[];
};

/** Prometheus names as the Moleculer reporter writes them; a histogram's series add their suffixes. */
const HISTOGRAM_SUFFIXES = ["", "_count", "_sum", "_bucket", "_min", "_max", "_mean"];
const promName = (name: string) => name.replace(/[.-]/g, "_");
const known = new Set(
  Object.values(BUSINESS_METRICS).flatMap((name) =>
    name === BUSINESS_METRICS.providerSendDuration
      ? HISTOGRAM_SUFFIXES.map((s) => promName(name) + s)
      : [promName(name)],
  ),
);

/** The metric names an expression selects: identifiers not called as functions, outside selectors, ranges and groupings. */
function metricsOf(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, "")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without)\s*\([^)]*\)/g, " ");
  return [...bare.matchAll(/\b([a-zA-Z_:][\w:]*)\b(?!\s*\()/g)].map((m) => m[1]);
}

test("the expression parser finds metric names, not functions, labels or ranges", () => {
  expect(metricsOf('sum by (channel, status) (rate(app_messages_total{channel="email"}[5m]))')).toEqual([
    "app_messages_total",
  ]);
  expect(metricsOf("max by (queue) (app_queue_depth) / app_x")).toEqual(["app_queue_depth", "app_x"]);
});

test("every panel's expressions name metrics that exist", () => {
  expect(dashboard.panels.length).toBeGreaterThan(0);
  for (const panel of dashboard.panels) {
    expect(panel.targets.length).toBeGreaterThan(0);
    for (const { expr } of panel.targets) {
      const names = metricsOf(expr);
      expect({ panel: panel.title, names: names.length > 0 }).toEqual({ panel: panel.title, names: true });
      expect({ panel: panel.title, unknown: names.filter((n) => !known.has(n)) }).toEqual({
        panel: panel.title,
        unknown: [],
      });
    }
  }
});

test("every business metric has a panel", () => {
  const charted = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => metricsOf(t.expr))));
  const missing = Object.values(BUSINESS_METRICS)
    .map(promName)
    .filter((name) => !HISTOGRAM_SUFFIXES.some((suffix) => charted.has(name + suffix)));
  expect(missing).toEqual([]);
});
