/**
 * What every push client (web push through VAPID, pushgw1, pushgw2) takes
 * and answers. A push message goes to each of its contact's active
 * subscriptions; each subscription's outcome is its own (one dead token
 * never fails the others), and `gone` deactivates the subscription.
 */

export type PushSubscriptionType = "web" | "pushgw1" | "pushgw2";

/** One device or browser a push goes to. */
export interface PushTarget {
  subscriptionId: string;
  type: PushSubscriptionType;
  /** Web push: the push service URL. */
  endpoint: string | null;
  /** pushgw1, pushgw2: the device token. */
  token: string | null;
  /** Web push: the browser's keys (RFC 8291), opened by the sending process. */
  keys: { p256dh: string; auth: string } | null;
}

/** A rendered push template (contract 2) and the message it belongs to. */
export interface PushNotification {
  messageId: string;
  title: string;
  body: string;
  /** Where a click leads (the tracked link when tracking is on). */
  url: string | null;
  icon: string | null;
  image: string | null;
}

export type PushOutcome =
  | { status: "accepted"; providerMessageId: string | null }
  /** The push service says the subscription no longer exists (404/410, UNREGISTERED, BadDeviceToken, Unregistered). */
  | { status: "gone"; code: string }
  /** `code`: the provider's own error code or HTTP status; never a credential. */
  | { status: "failed"; code: string; transient: boolean };

export interface PushClient {
  id: string;
  type: "vapid" | "pushgw1" | "pushgw2";
  push(target: PushTarget, notification: PushNotification): Promise<PushOutcome>;
  /** Ends kept connections (pushgw2's HTTP/2 session). */
  close?(): Promise<void>;
}
