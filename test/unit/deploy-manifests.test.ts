import fs from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { BUSINESS_METRICS } from "../../lib/business-metrics";
import { QUEUE_OWNERS } from "../../lib/queue-stats";
import { config } from "../../lib/config";
import { brokerConfig } from "../../moleculer.config";

/**
 * No Docker engine or cluster runs in CI, so the deployment files are
 * validated as files: they parse, and every service they run exists.
 */
const ROOT = path.resolve(__dirname, "../..");
const serviceNames = fs
  .readdirSync(path.join(ROOT, "services"), { withFileTypes: true })
  .filter(
    (d) => d.isDirectory() && fs.existsSync(path.join(ROOT, "services", d.name, `${d.name}.service.ts`)),
  )
  .map((d) => d.name);

function load(file: string): Record<string, any>[] {
  const docs = parseAllDocuments(fs.readFileSync(path.join(ROOT, file), "utf8"));
  for (const doc of docs) expect(doc.errors).toEqual([]);
  return docs.map((d) => d.toJS()).filter(Boolean);
}

const listed = (value: string) => value.split(",").map((s) => s.trim());

test("docker-compose runs every service exactly once across its groups", () => {
  const [compose] = load("docker-compose.yml");
  const run = Object.values(compose.services as Record<string, { environment?: Record<string, string> }>)
    .map((s) => s.environment?.SERVICES)
    .filter((s): s is string => Boolean(s))
    .flatMap(listed);
  expect([...run].sort()).toEqual([...serviceNames].sort());
  for (const name of ["postgres", "redis", "nats"]) expect(compose.services[name]).toBeDefined();
  expect(compose.services.nats.command).toContain("-js");
});

test("k8s: kustomization lists existing files and the Deployments cover every service once", () => {
  const [kustomization] = load("k8s/kustomization.yaml");
  const resources: string[] = kustomization.resources;
  for (const resource of resources) expect(fs.existsSync(path.join(ROOT, "k8s", resource))).toBe(true);

  const all = resources.flatMap((r) => load(path.join("k8s", r)));
  for (const doc of all) {
    expect(doc.apiVersion).toEqual(expect.any(String));
    expect(doc.kind).toEqual(expect.any(String));
    expect(doc.metadata?.name).toEqual(expect.any(String));
  }
  const cmsDeployments = all.filter((d) => d.kind === "Deployment" && d.metadata.labels?.app === "cms");
  const run = cmsDeployments.flatMap((d) => {
    const env: Array<{ name: string; value?: string }> = d.spec.template.spec.containers[0].env;
    const services = env.find((e) => e.name === "SERVICES")?.value ?? "";
    expect(d.spec.selector.matchLabels).toEqual(d.spec.template.metadata.labels);
    return listed(services);
  });
  expect([...run].sort()).toEqual([...serviceNames].sort());
  const secret = all.find((d) => d.kind === "Secret");
  expect(Object.keys(secret?.stringData ?? {})).toEqual(
    expect.arrayContaining(["DATABASE_URL", "AUTH_SECRET", "CRON_SECRET"]),
  );
});

test("k8s: every service's pods are probed, sized, and wait for the migration Job; HPAs and PDBs aim at real Deployments", () => {
  const [kustomization] = load("k8s/kustomization.yaml");
  const all = (kustomization.resources as string[]).flatMap((r) => load(path.join("k8s", r)));
  const deployments = all.filter((d) => d.kind === "Deployment" && d.metadata.labels?.app === "cms");
  expect(deployments.map((d) => d.metadata.name).sort()).toEqual(serviceNames.map((s) => `cms-${s}`).sort());
  for (const d of deployments) {
    const [c] = d.spec.template.spec.containers;
    const health = c.ports.find((p: { name: string }) => p.name === "health").containerPort;
    expect({ name: d.metadata.name, ready: c.readinessProbe.httpGet, live: c.livenessProbe.httpGet }).toEqual(
      {
        name: d.metadata.name,
        ready: { path: "/ready", port: "health" },
        live: { path: "/live", port: "health" },
      },
    );
    expect(health).toBe(3001);
    expect(c.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
    expect(c.resources.limits.memory).toEqual(expect.any(String));
  }
  const config = all.find((d) => d.kind === "ConfigMap" && d.metadata.name === "cms-config");
  expect(config?.data).toMatchObject({ MIGRATE: "false", HEALTH_PORT: "3001" });
  const job = all.find((d) => d.kind === "Job");
  expect(job?.spec.template.spec.containers[0].command).toEqual(["node", "dist/bin/migrate.js"]);
  expect(fs.existsSync(path.join(ROOT, "bin/migrate.ts"))).toBe(true);

  const hpas = all.filter((d) => d.kind === "HorizontalPodAutoscaler");
  expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(
    ["cms-api", "cms-events", "cms-messages", "cms-webhooks"].sort(),
  );
  for (const pdb of all.filter((d) => d.kind === "PodDisruptionBudget")) {
    const target = deployments.find((d) => d.metadata.name === pdb.metadata.name);
    expect({ pdb: pdb.metadata.name, replicas: target?.spec.replicas >= 2 }).toEqual({
      pdb: pdb.metadata.name,
      replicas: true,
    });
    expect(target?.spec.selector.matchLabels).toEqual(pdb.spec.selector.matchLabels);
  }
  // Only the gateway takes traffic from outside the namespace.
  const open = all.filter(
    (d) => d.kind === "NetworkPolicy" && d.spec.ingress.some((rule: { from?: unknown }) => !rule.from),
  );
  expect(open.map((p) => p.spec.podSelector.matchLabels)).toEqual([{ app: "cms", service: "api" }]);
});

test("k8s/queue-depth: the patched HPAs keep the base's target, bounds and CPU metric and add their queue's due rows, as the metrics name them", () => {
  const [overlay] = load("k8s/queue-depth/kustomization.yaml");
  expect(overlay.resources).toEqual([".."]);
  const base = load("k8s/hpa.yaml");
  const exported = BUSINESS_METRICS.queueDepth.replace(/\./g, "_");
  const patched = (overlay.patches as Array<{ path: string }>).flatMap((p) =>
    load(path.join("k8s/queue-depth", p.path)),
  );
  expect(patched.map((h) => h.metadata.name).sort()).toEqual(["cms-messages", "cms-webhooks"]);
  for (const hpa of patched) {
    const before = base.find((b) => b.metadata.name === hpa.metadata.name)!;
    const { metrics, ...bounds } = hpa.spec;
    const { metrics: baseMetrics, ...baseBounds } = before.spec;
    expect(bounds).toEqual(baseBounds);
    // A patch replaces the metrics list whole: the base's must be there.
    expect(metrics.slice(0, baseMetrics.length)).toEqual(baseMetrics);
    const queue = hpa.metadata.name.replace(/^cms-/, "");
    expect(metrics.slice(baseMetrics.length)).toEqual([
      {
        type: "External",
        external: {
          metric: { name: exported, selector: { matchLabels: { queue, state: "due" } } },
          target: { type: "AverageValue", averageValue: expect.stringMatching(/^\d+$/) },
        },
      },
    ]);
    expect(QUEUE_OWNERS).toContain(queue);
  }
  const [adapter] = load("k8s/queue-depth/prometheus-adapter-values.yaml");
  expect(adapter.rules.external.map((r: { name: { as: string } }) => r.name.as)).toEqual([exported]);
  expect(adapter.rules.external[0].seriesQuery).toContain(exported);
});

test("k8s: each pod's grace period covers its stop: the requests it runs, then one call, send or delivery under way", () => {
  const [kustomization] = load("k8s/kustomization.yaml");
  const all = (kustomization.resources as string[]).flatMap((r) => load(path.join("k8s", r)));
  const deployments = all.filter((d) => d.kind === "Deployment" && d.metadata.labels?.app === "cms");
  const broker = brokerConfig();
  const cfg = config();
  // A stopping node finishes its requests (tracking), then its loops finish what they started: the messages
  // worker its sends under way (the rest go back to the queue), the webhooks worker gives its deliveries back,
  // every other loop its one pass, whose longest wait is a call, a provider's answer or an endpoint's.
  const stopMs =
    (broker.tracking?.shutdownTimeout ?? 0) +
    Math.max(broker.requestTimeout ?? 0, cfg.providerTimeoutMs, cfg.webhookTimeoutMs);
  for (const d of deployments)
    expect({
      name: d.metadata.name,
      coversStop: d.spec.template.spec.terminationGracePeriodSeconds * 1000 >= stopMs,
    }).toEqual({
      name: d.metadata.name,
      coversStop: true,
    });
});
