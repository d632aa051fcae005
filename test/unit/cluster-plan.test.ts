import fs from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import {
  CLUSTER_GROUPS,
  CLUSTER_REQUIRES,
  MAX_REPLICAS,
  clusterPlan,
  replicaPlan,
  serviceFiles,
} from "../../lib/cluster-plan";
import { allServiceFiles, serviceFileName } from "../helpers/app";

const ROOT = path.resolve(__dirname, "../..");
const FILES = serviceFiles(path.join(ROOT, "services"));
const ENV = {
  DATABASE_URL: "postgres://db/cms",
  NATS_URL: "nats://nats:4222",
  REDIS_URL: "redis://redis:6379",
  AUTH_SECRET: "s",
};

test("the service files are those the test helper loads, named as SERVICES names them", () => {
  expect(FILES).toEqual(allServiceFiles().map(serviceFileName));
  expect(FILES).toContain("crm/deals");
});

test("the groups are docker-compose.yml's, and together run every service folder once", () => {
  const compose = parse(fs.readFileSync(path.join(ROOT, "docker-compose.yml"), "utf8"));
  const composeGroups = Object.values(
    compose.services as Record<string, { environment?: { SERVICES?: string } }>,
  )
    .map((s) => s.environment?.SERVICES)
    .filter((s): s is string => Boolean(s))
    .sort();
  expect(
    Object.values(CLUSTER_GROUPS)
      .map((areas) => areas.join(","))
      .sort(),
  ).toEqual(composeGroups);
  const areas = [...new Set(FILES.map((f) => f.split("/")[0]))].sort();
  expect(Object.values(CLUSTER_GROUPS).flat().sort()).toEqual(areas);
});

test("--each: one process per service file, each named and with a node id of its own", () => {
  const plan = clusterPlan("each", FILES, ENV, "host1");
  expect(plan.map((p) => p.env.SERVICES)).toEqual(FILES);
  expect(new Set(plan.map((p) => p.env.NODE_ID)).size).toBe(FILES.length);
  expect(plan.find((p) => p.env.SERVICES === "crm/deals")).toEqual({
    name: "crm-deals",
    env: { SERVICES: "crm/deals", NODE_ID: "crm-deals-host1" },
  });
});

test("METRICS_PORT and HEALTH_PORT: each process takes its own ports from them upwards", () => {
  const plan = clusterPlan("groups", FILES, { ...ENV, METRICS_PORT: "9100", HEALTH_PORT: "9200" }, "h");
  expect(plan.map((p) => p.env.METRICS_PORT)).toEqual(plan.map((_, i) => String(9100 + i)));
  expect(plan.map((p) => p.env.HEALTH_PORT)).toEqual(plan.map((_, i) => String(9200 + i)));
  expect(plan[0]).toEqual({
    name: "api",
    env: { SERVICES: "api", NODE_ID: "api-h", METRICS_PORT: "9100", HEALTH_PORT: "9200" },
  });
  expect(clusterPlan("groups", FILES, ENV, "h")[0].env).toEqual({ SERVICES: "api", NODE_ID: "api-h" });
});

test("refuses to plan without what the processes must share, naming each missing variable", () => {
  for (const name of CLUSTER_REQUIRES) {
    const env: Record<string, string> = { ...ENV };
    delete env[name];
    expect(() => clusterPlan("groups", FILES, env, "h")).toThrow(name);
  }
});

test("--replicas N: one runner of every service folder, N copies of it sharing its ports", () => {
  const areas = [...new Set(FILES.map((f) => f.split("/")[0]))];
  expect(replicaPlan("2", FILES, { ...ENV, HEALTH_PORT: "9200" }, "h")).toEqual({
    name: "replicas",
    env: { SERVICES: areas.join(","), NODE_ID: "replica-h" },
    instances: 2,
  });
  expect(replicaPlan(String(MAX_REPLICAS), FILES, ENV, "h").instances).toBe(MAX_REPLICAS);
});

test("--replicas refuses a count that is not a whole number from 1 to the maximum, and a missing variable", () => {
  for (const count of ["0", "-1", "1.5", "two", "", String(MAX_REPLICAS + 1)])
    expect(() => replicaPlan(count, FILES, ENV, "h")).toThrow(
      `--replicas takes a whole number from 1 to ${MAX_REPLICAS}`,
    );
  const env: Record<string, string> = { ...ENV };
  delete env.NATS_URL;
  expect(() => replicaPlan("2", FILES, env, "h")).toThrow("NATS_URL");
});
