import fs from "node:fs";
import path from "node:path";

/**
 * The processes `npm run start:cluster` starts (bin/start-cluster.ts): the
 * service groups of docker-compose.yml (a unit test keeps the two equal), or
 * with `--each` one process per service file, as `SERVICES` names it for
 * moleculer-runner (`crm/deals` loads services/crm/deals.service.js).
 */
export const CLUSTER_GROUPS: Readonly<Record<string, readonly string[]>> = {
  api: ["api"],
  core: ["auth", "workspaces", "jobs", "cron", "retention"],
  contacts: ["contacts", "crm", "forms", "content", "integrations", "analytics", "reports", "push"],
  activity: ["events", "segments", "campaigns", "scoring"],
  webhooks: ["webhooks"],
  messaging: ["templates", "messages", "providers", "inbox"],
};

export interface ClusterProcess {
  /** Its name in the plan, also the start of its node id. */
  name: string;
  /** The environment it runs with, beside the supervisor's own. */
  env: Record<string, string>;
}

/** Every service file under `serviceDir` (`.service.js` compiled, `.service.ts` in the sources), as `area/file`. */
export function serviceFiles(serviceDir: string): string[] {
  return fs
    .readdirSync(serviceDir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      fs
        .readdirSync(path.join(serviceDir, d.name))
        .filter((f) => /\.service\.(js|ts)$/.test(f))
        .map((f) => `${d.name}/${f.replace(/\.service\.(js|ts)$/, "")}`),
    )
    .sort();
}

/** Variables without which the processes could not share one product. */
export const CLUSTER_REQUIRES = ["DATABASE_URL", "NATS_URL", "REDIS_URL", "AUTH_SECRET"] as const;

/**
 * The processes to start: each with its SERVICES and NODE_ID; the gateway
 * alone listens on PORT. With METRICS_PORT or HEALTH_PORT set, each process
 * takes its own port from it upwards (one machine, so they cannot share one).
 */
export function clusterPlan(
  mode: "groups" | "each",
  files: string[],
  env: Record<string, string | undefined>,
  host: string,
): ClusterProcess[] {
  const missing = CLUSTER_REQUIRES.filter((name) => !env[name]);
  if (missing.length)
    throw new Error(`start:cluster needs ${missing.join(", ")} (see README, "Running the cluster shape")`);
  const units: Array<[string, string]> =
    mode === "groups"
      ? Object.entries(CLUSTER_GROUPS).map(([name, areas]) => [name, areas.join(",")])
      : files.map((file) => [file.replace("/", "-"), file]);
  const ports = (["METRICS_PORT", "HEALTH_PORT"] as const).filter((name) => env[name]);
  return units.map(([name, services], index) => ({
    name,
    env: {
      SERVICES: services,
      NODE_ID: `${name}-${host}`,
      ...Object.fromEntries(ports.map((port) => [port, String(Number(env[port]) + index)])),
    },
  }));
}
