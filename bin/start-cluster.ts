/**
 * `npm run start:cluster [-- --each | --replicas N]`: the whole product as
 * separate processes over NATS, on the PostgreSQL, NATS and Redis the
 * environment names (lib/cluster-plan.ts): the service groups of
 * docker-compose.yml, with `--each` one process per service, or with
 * `--replicas N` N copies of the whole product serving one port. Each is
 * moleculer-runner with its own SERVICES and NODE_ID. Ctrl-C (or SIGTERM) stops them all gracefully;
 * when one exits on its own the rest are stopped too and the exit code says
 * so, because a product with a service missing is not running.
 */
import { spawn, type ChildProcess } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { clusterPlan, replicaPlan, serviceFiles } from "../lib/cluster-plan";

const DIST = path.resolve(__dirname, "..");
const SERVICE_DIR = path.join(DIST, "services");
// The package exports only its entry, so its bin is found beside it.
const RUNNER = path.join(path.dirname(require.resolve("moleculer")), "bin", "moleculer-runner.js");

/**
 * SIGTERM to a child's whole process group: a runner with `--instances` and
 * its copies are told once each, so every copy's broker stops gracefully. A
 * group that has just gone is left alone.
 */
function stopGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, "SIGTERM");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

function main(): void {
  let plan;
  try {
    const { values } = parseArgs({
      options: { each: { type: "boolean", default: false }, replicas: { type: "string" } },
    });
    if (values.each && values.replicas !== undefined)
      throw new Error("--each and --replicas exclude each other");
    const files = serviceFiles(SERVICE_DIR);
    plan =
      values.replicas !== undefined
        ? [replicaPlan(values.replicas, files, process.env, os.hostname())]
        : clusterPlan(values.each ? "each" : "groups", files, process.env, os.hostname());
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
    for (const child of children.values()) stopGroup(child);
  };

  for (const unit of plan) {
    const instances = unit.instances ? ["--instances", String(unit.instances)] : [];
    const child = spawn(
      process.execPath,
      [RUNNER, "--config", path.join(DIST, "moleculer.config.js"), ...instances],
      {
        env: { ...process.env, SERVICEDIR: SERVICE_DIR, ...unit.env },
        stdio: "inherit",
        // Its own process group: Ctrl-C reaches the supervisor alone, which stops each child once (a broker
        // told to stop twice runs its shutdown twice).
        detached: true,
      },
    );
    children.set(unit.name, child);
    const copies = unit.instances ? ` x${unit.instances}` : "";
    console.error(`start:cluster: ${unit.name}${copies} (SERVICES=${unit.env.SERVICES}) pid ${child.pid}`);
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
