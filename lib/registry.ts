import type { ServiceBroker } from "moleculer";

/** Whether some node currently runs the named service (optional steps skip an absent one). */
export function isServiceAvailable(broker: ServiceBroker, name: string): boolean {
  return broker.registry
    .getServiceList({ onlyAvailable: true, skipInternal: true })
    .some((s) => s.name === name);
}
