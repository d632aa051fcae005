import fs from "node:fs";
import path from "node:path";

/**
 * The processes `npm run start:cluster` starts (bin/start-cluster.ts): the
 * service groups of docker-compose.yml (a unit test keeps the two equal),
 * with `--each` one process per service file, as `SERVICES` names it for
 * moleculer-runner (`crm/deals` loads services/crm/deals.service.js), or
 * with `--replicas N` N copies of the whole product serving one port.
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
  /**
   * Copies of it that share its ports (moleculer-runner's `--instances`: Node's cluster module hands each
   * a connection in turn), each a node of its own (the runner adds `-<n>` to NODE_ID). One when unset.
   */
  instances?: number;
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

function requireShared(env: Record<string, string | undefined>): void {
  const missing = CLUSTER_REQUIRES.filter((name) => !env[name]);
  if (missing.length)
    throw new Error(`start:cluster needs ${missing.join(", ")} (see README, "Running the cluster shape")`);
}

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
  requireShared(env);
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

/** At most this many copies on one host: more than its cores only adds switching. */
export const MAX_REPLICAS = 64;

/**
 * `--replicas N`: the whole product N times on this host, every copy serving
 * PORT, so all of the host's cores answer requests (one Node process uses
 * one). The copies are replicas as on several hosts: each claims durable work
 * with the rest, and caches are cleared on all of them over NATS.
 */
export function replicaPlan(
  count: string,
  files: string[],
  env: Record<string, string | undefined>,
  host: string,
): ClusterProcess {
  requireShared(env);
  const instances = Number(count);
  if (!Number.isInteger(instances) || instances < 1 || instances > MAX_REPLICAS)
    throw new Error(`--replicas takes a whole number from 1 to ${MAX_REPLICAS}, not "${count}"`);
  const areas = [...new Set(files.map((file) => file.split("/")[0]))];
  return { name: "replicas", env: { SERVICES: areas.join(","), NODE_ID: `replica-${host}` }, instances };
}
