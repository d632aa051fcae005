/**
 * `npm run start:cluster [-- --each]`: the whole product as separate
 * processes over NATS, on the PostgreSQL, NATS and Redis the environment
 * names (lib/cluster-plan.ts): the service groups of docker-compose.yml, or
 * with `--each` one process per service. Each is moleculer-runner with its
 * own SERVICES and NODE_ID. Ctrl-C (or SIGTERM) stops them all gracefully;
 * when one exits on its own the rest are stopped too and the exit code says
 * so, because a product with a service missing is not running.
 */
import { spawn, type ChildProcess } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { clusterPlan, serviceFiles } from "../lib/cluster-plan";

const DIST = path.resolve(__dirname, "..");
const SERVICE_DIR = path.join(DIST, "services");
// The package exports only its entry, so its bin is found beside it.
const RUNNER = path.join(path.dirname(require.resolve("moleculer")), "bin", "moleculer-runner.js");

function main(): void {
  const { values } = parseArgs({ options: { each: { type: "boolean", default: false } } });
  let plan;
  try {
    plan = clusterPlan(
      values.each ? "each" : "groups",
      serviceFiles(SERVICE_DIR),
      process.env,
      os.hostname(),
    );
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }

  const children = new Map<string, ChildProcess>();
  let stopping = false;
  let exitCode = 0;
  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    for (const child of children.values()) child.kill("SIGTERM");
  };

  for (const unit of plan) {
    const child = spawn(process.execPath, [RUNNER, "--config", path.join(DIST, "moleculer.config.js")], {
      env: { ...process.env, SERVICEDIR: SERVICE_DIR, ...unit.env },
      stdio: "inherit",
      // Its own process group: Ctrl-C reaches the supervisor alone, which stops each child once (a broker
      // told to stop twice runs its shutdown twice).
      detached: true,
    });
    children.set(unit.name, child);
    console.error(`start:cluster: ${unit.name} (SERVICES=${unit.env.SERVICES}) pid ${child.pid}`);
    child.on("exit", (code, signal) => {
      children.delete(unit.name);
      if (!stopping) {
        console.error(`start:cluster: ${unit.name} exited (${signal ?? code}); stopping the others`);
        exitCode = 1;
        stopAll();
      }
      if (children.size === 0) process.exit(exitCode);
    });
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, stopAll);
}

main();
