import type { ServiceBroker } from "moleculer";
import { newId } from "../../lib/crypto";
import { sendDomainEvent, type DomainEvent } from "../../lib/domain-events";
import { asWorkspaceId } from "../../lib/tenancy";

/** A fact put straight onto the channel, with no write behind it (the services stage theirs in the outbox). */
export async function publishDomainEvent(
  broker: ServiceBroker,
  workspaceId: string,
  type: string,
  data: Record<string, unknown>,
): Promise<DomainEvent> {
  const event: DomainEvent = {
    id: newId(),
    workspaceId: asWorkspaceId(workspaceId),
    type,
    data,
    occurredAt: new Date().toISOString(),
  };
  await sendDomainEvent(broker, event);
  return event;
}
