import type { MetricRegistry } from "moleculer";
import { timeProviderSend, type SendErrorKind } from "../../lib/business-metrics";
import type {
  PushClient,
  PushNotification,
  PushOutcome,
  PushSubscriptionType,
} from "../providers/clients/push";
import type { SendTarget } from "../push/for-send";
import type { Content } from "../templates/render";

/**
 * The push channel's send, pure of storage: a message goes to every active
 * subscription of its contact, each through the provider of its type (web:
 * the workspace's VAPID pair; pushgw1, pushgw2: their gateway's); each
 * subscription's outcome is its own, and the message's follows from all of
 * them.
 */

/** The subscription type each push provider type serves. */
export const SUBSCRIPTION_TYPE_OF: Readonly<Record<string, PushSubscriptionType>> = {
  vapid: "web",
  pushgw1: "pushgw1",
  pushgw2: "pushgw2",
};

/** A subscription whose type has no provider configured: not sent to. */
export const NOT_CONFIGURED = "not_configured";

export type AttemptOutcome = PushOutcome | { status: "skipped"; code: typeof NOT_CONFIGURED };

export interface PushAttempt {
  target: SendTarget;
  /** The client it went through; null when skipped. */
  client: PushClient | null;
  outcome: AttemptOutcome;
}

const text = (value: unknown): string | null => (typeof value === "string" && value ? value : null);

/** A rendered push template (contract 2) as the clients take it. */
export const notificationOf = (messageId: string, content: Content): PushNotification => ({
  messageId,
  title: String(content.title ?? ""),
  body: String(content.body ?? ""),
  url: text(content.url),
  icon: text(content.icon),
  image: text(content.image),
});

/**
 * A push answer as a send error of the business metrics: a failure as the
 * client says; a subscription gone is refused for good (permanent).
 */
export function pushFailure(outcome: PushOutcome): SendErrorKind | null {
  if (outcome.status === "accepted") return null;
  return outcome.status === "failed" && outcome.transient ? "transient" : "permanent";
}

/**
 * Push to each target at once through its type's client, each request timed
 * and its failures counted (lib/business-metrics.ts); a client that throws is
 * a transient failure of that target only.
 */
export function pushToAll(
  targets: SendTarget[],
  clients: ReadonlyMap<PushSubscriptionType, PushClient>,
  notification: PushNotification,
  metrics?: MetricRegistry,
): Promise<PushAttempt[]> {
  return Promise.all(
    targets.map(async (target): Promise<PushAttempt> => {
      const client = clients.get(target.type) ?? null;
      if (!client) return { target, client, outcome: { status: "skipped", code: NOT_CONFIGURED } };
      const push = () =>
        timeProviderSend(
          metrics,
          client.type,
          () => true,
          () => client.push(target, notification),
          pushFailure,
        );
      const outcome = await push().catch((err: unknown): PushOutcome => ({
        status: "failed",
        code: (err as { code?: string }).code ?? "error",
        transient: true,
      }));
      return { target, client, outcome };
    }),
  );
}

export type PushVerdict =
  | { kind: "sent"; client: PushClient; providerMessageId: string | null }
  /** Every attempt on one provider failed transiently: the message is retried with backoff. */
  | { kind: "retry"; error: string }
  | { kind: "failed"; error: string };

/** What each attempt came to, as the message's error lists it: `<subscription type> <code>`. */
const codesOf = (attempts: PushAttempt[]): string =>
  attempts
    .map((a) => `${a.target.type} ${a.outcome.status === "accepted" ? "accepted" : a.outcome.code}`)
    .join(", ");

/**
 * The message's outcome: `sent` when at least one subscription accepted it
 * (the first one's provider is the message's); else retried when every
 * attempt on one provider failed transiently (a push service down, rate
 * limiting); else failed, naming each subscription's code.
 */
export function verdictOf(attempts: PushAttempt[]): PushVerdict {
  for (const a of attempts)
    if (a.outcome.status === "accepted" && a.client)
      return { kind: "sent", client: a.client, providerMessageId: a.outcome.providerMessageId };
  const byProvider = new Map<string, PushAttempt[]>();
  for (const a of attempts)
    if (a.client) byProvider.set(a.client.id, [...(byProvider.get(a.client.id) ?? []), a]);
  const transient = [...byProvider.values()].some((all) =>
    all.every((a) => a.outcome.status === "failed" && a.outcome.transient),
  );
  const error = `No subscription accepted the push: ${codesOf(attempts)}`;
  return transient ? { kind: "retry", error } : { kind: "failed", error };
}
