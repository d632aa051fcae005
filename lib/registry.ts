import { Errors, type Middleware, type ServiceBroker } from "moleculer";
import { isNotFound, type FieldIssue } from "./errors";
import type { AppContext } from "./moleculer-types";
import { systemCall } from "./system-call";
import { workspaceOf } from "./tenancy";

const runningServices = (broker: ServiceBroker) =>
  broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }).map((s) => s.name);

/** Whether some node currently runs the named service (optional steps skip an absent one). */
export function isServiceAvailable(broker: ServiceBroker, name: string): boolean {
  return runningServices(broker).includes(name);
}

/** Per broker, every service some node has run since `watchServices` began keeping count. */
const servicesSeen = new WeakMap<ServiceBroker, Set<string>>();

/** Keep count, from now on, of the services this broker sees on any node (`serviceReach`'s memory). */
function watchServices(broker: ServiceBroker): void {
  if (servicesSeen.has(broker)) return;
  const seen = new Set<string>();
  const record = () => runningServices(broker).forEach((name) => seen.add(name));
  broker.localBus.on("$services.changed", record);
  record();
  servicesSeen.set(broker, seen);
}

/** Every broker keeps count from its creation, so a step's service gone after a start is told from one never deployed. */
export const ServiceWatchMiddleware = {
  name: "ServiceWatch",
  created(broker: ServiceBroker) {
    watchServices(broker);
  },
} as unknown as Middleware;

/**
 * An optional step's service: `running` on some node now; `gone` when a node
 * ran it since this broker began watching (a transporter outage, a node lost
 * or restarting: the step is unreachable, and skipping it would lose its
 * work); else `absent`, not deployed in this shape.
 */
export function serviceReach(broker: ServiceBroker, name: string): "running" | "gone" | "absent" {
  if (isServiceAvailable(broker, name)) return "running";
  return servicesSeen.get(broker)?.has(name) ? "gone" : "absent";
}

/**
 * Whether an optional step (`<service>.<action>`) runs: false when its
 * service is not deployed; a service that has gone throws (503), so the
 * caller's queue tries the work again instead of skipping the step.
 */
export function optionalStepRuns(broker: ServiceBroker, action: string): boolean {
  const reach = serviceReach(broker, action.split(".")[0]);
  if (reach === "gone") throw new Errors.ServiceNotAvailableError({ action });
  return reach === "running";
}

/**
 * Whether a record another service keeps is the caller's workspace's: `action`
 * (that service's get) answers, or its 404 says no. An issue on `field`
 * otherwise, or when no node runs the service to ask.
 */
export async function referenceIssue(
  ctx: AppContext,
  field: string,
  action: string,
  params: Record<string, string>,
): Promise<FieldIssue | null> {
  const service = action.split(".")[0];
  if (!isServiceAvailable(ctx.broker, service))
    return { field, message: `cannot be checked: ${service} is not deployed` };
  const ws = workspaceOf(ctx);
  try {
    await systemCall(ctx, ws, action, { workspaceId: ws, ...params });
    return null;
  } catch (err) {
    if (isNotFound(err)) return { field, message: "is not one of the workspace's" };
    throw err;
  }
}
