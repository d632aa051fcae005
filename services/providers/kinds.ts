import type { ProviderChannel } from "../../lib/channels";
import type { TObject } from "@sinclair/typebox";
import type { Callback, ProviderEvent } from "./callbacks";
import * as chatapp1Callbacks from "./chatapp1/callbacks";
import { chatapp1Client } from "./chatapp1/client";
import { CHATAPP1_SECRET_FIELDS, chatapp1Config } from "./chatapp1/config";
import type { PushClient } from "./clients/push";
import type { ProviderClient } from "./clients/types";
import * as chatapp2Callbacks from "./chatapp2/callbacks";
import { chatapp2Client } from "./chatapp2/client";
import { CHATAPP2_SECRET_FIELDS, chatapp2Config } from "./chatapp2/config";
import * as emailapi1Callbacks from "./emailapi1/callbacks";
import { emailapi1Client } from "./emailapi1/client";
import { EMAILAPI1_SECRET_FIELDS, emailapi1Config } from "./emailapi1/config";
import * as emailapi2Callbacks from "./emailapi2/callbacks";
import { emailapi2Client } from "./emailapi2/client";
import { EMAILAPI2_SECRET_FIELDS, emailapi2Config } from "./emailapi2/config";
import { pushgw1Client } from "./pushgw1/client";
import { PUSHGW1_SECRET_FIELDS, pushgw1Config } from "./pushgw1/config";
import { pushgw2Client } from "./pushgw2/client";
import { PUSHGW2_SECRET_FIELDS, pushgw2Config } from "./pushgw2/config";
import * as smsapi1Callbacks from "./smsapi1/callbacks";
import { smsapi1Client } from "./smsapi1/client";
import { SMSAPI1_SECRET_FIELDS, smsapi1Config } from "./smsapi1/config";
import * as smsapi2Callbacks from "./smsapi2/callbacks";
import { smsapi2Client } from "./smsapi2/client";
import { SMSAPI2_SECRET_FIELDS, smsapi2Config } from "./smsapi2/config";
import { smtpClient } from "./smtp/client";
import { SMTP_SECRET_FIELDS, smtpConfig } from "./smtp/config";
import { vapidClient } from "./vapid/client";
import { VAPID_SECRET_FIELDS, vapidConfig } from "./vapid/config";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * A provider type is one folder, `services/providers/<type>/`: `config.ts`
 * (its TypeBox settings schema and which fields are secret), `client.ts`
 * (its wire, run by the process that sends, with the secrets it opened
 * itself) and, when the provider calls back, `callbacks.ts` (its signature
 * check and its events in our words). This list joins them; push and chat
 * providers take the same shape.
 */
export interface ProviderKind {
  channel: ProviderChannel;
  config: TObject;
  secretFields: readonly string[];
  /** Absent: the type sends through its channel's own clients (push), not a message client. */
  client?(id: string, config: never, workspaceId: WorkspaceId): ProviderClient;
  /** Push types: the client that sends to one subscription of their kind. */
  pushClient?(id: string, config: never): PushClient;
  /** Absent: the provider does not call back. */
  callbacks?: {
    verifyCallback(cb: Callback, config: Record<string, unknown>, now: Date): boolean;
    readEvents(rawBody: string): ProviderEvent[];
  };
}

export const PROVIDER_KINDS = {
  smtp: { channel: "email", config: smtpConfig, secretFields: SMTP_SECRET_FIELDS, client: smtpClient },
  emailapi1: {
    channel: "email",
    config: emailapi1Config,
    secretFields: EMAILAPI1_SECRET_FIELDS,
    client: emailapi1Client,
    callbacks: emailapi1Callbacks,
  },
  emailapi2: {
    channel: "email",
    config: emailapi2Config,
    secretFields: EMAILAPI2_SECRET_FIELDS,
    client: emailapi2Client,
    callbacks: emailapi2Callbacks,
  },
  smsapi1: {
    channel: "sms",
    config: smsapi1Config,
    secretFields: SMSAPI1_SECRET_FIELDS,
    client: smsapi1Client,
    callbacks: smsapi1Callbacks,
  },
  smsapi2: {
    channel: "sms",
    config: smsapi2Config,
    secretFields: SMSAPI2_SECRET_FIELDS,
    client: smsapi2Client,
    callbacks: smsapi2Callbacks,
  },
  vapid: {
    channel: "push",
    config: vapidConfig,
    secretFields: VAPID_SECRET_FIELDS,
    pushClient: vapidClient,
  },
  pushgw1: {
    channel: "push",
    config: pushgw1Config,
    secretFields: PUSHGW1_SECRET_FIELDS,
    pushClient: pushgw1Client,
  },
  pushgw2: {
    channel: "push",
    config: pushgw2Config,
    secretFields: PUSHGW2_SECRET_FIELDS,
    pushClient: pushgw2Client,
  },
  chatapp1: {
    channel: "chatapp1",
    config: chatapp1Config,
    secretFields: CHATAPP1_SECRET_FIELDS,
    client: chatapp1Client,
    callbacks: chatapp1Callbacks,
  },
  chatapp2: {
    channel: "chatapp2",
    config: chatapp2Config,
    secretFields: CHATAPP2_SECRET_FIELDS,
    client: chatapp2Client,
    callbacks: chatapp2Callbacks,
  },
} satisfies Record<string, ProviderKind>;

export type ProviderType = keyof typeof PROVIDER_KINDS;
export const PROVIDER_TYPES = Object.keys(PROVIDER_KINDS) as ProviderType[];
export const EMAIL_TYPES = ["smtp", "emailapi1", "emailapi2"] as const satisfies readonly ProviderType[];
export const SMS_TYPES = ["smsapi1", "smsapi2"] as const satisfies readonly ProviderType[];

/** What a client is made from: a stored provider with its secrets opened by the caller's process. */
interface ClientSource {
  id: string;
  type: ProviderType;
  config: Record<string, unknown>;
}

const kindOf = (type: string): ProviderKind | undefined =>
  (PROVIDER_KINDS as Record<string, ProviderKind>)[type];

/** The client of a stored provider (its config checked at write, its secrets opened by the caller's process). */
export function clientFor(provider: ClientSource, workspaceId: WorkspaceId): ProviderClient {
  const kind = kindOf(provider.type);
  if (!kind?.client) throw new Error(`Provider type ${provider.type} has no message client`);
  return kind.client(provider.id, provider.config as never, workspaceId);
}

/** The push client of a stored push provider (vapid, pushgw1, pushgw2). */
export function pushClientFor(provider: ClientSource): PushClient {
  const kind = kindOf(provider.type);
  if (!kind?.pushClient) throw new Error(`Provider type ${provider.type} has no push client`);
  return kind.pushClient(provider.id, provider.config as never);
}

/** Whether the callback carries the provider's valid signature; false when the provider has no key to check it with. */
export function verifyCallback(
  type: ProviderType,
  cb: Callback,
  config: Record<string, unknown>,
  now = new Date(),
): boolean {
  return kindOf(type)?.callbacks?.verifyCallback(cb, config, now) ?? false;
}

/** The events of a callback, in our words; what we do not use (deferrals, `processed`, `sent`) is left out. */
export function readEvents(type: ProviderType, rawBody: string): ProviderEvent[] {
  return kindOf(type)?.callbacks?.readEvents(rawBody) ?? [];
}
