/**
 * The channels a message goes out on (contract 4), defined once, and the
 * subsets of them that areas act on. Schemas build their enums from these.
 */

export const CHANNELS = ["email", "sms", "push", "chatapp1", "chatapp2"] as const;
export type Channel = (typeof CHANNELS)[number];

/** A contact's consent is kept per channel, on every channel. */
export const CONSENT_CHANNELS = CHANNELS;
export type ConsentChannel = Channel;

/** Channels on which a marketing send needs the contact's explicit opt-in. */
export const OPT_IN_CHANNELS = ["sms", "chatapp2"] as const satisfies readonly Channel[];

/** Channels a workspace configures providers for: every channel. */
export const PROVIDER_CHANNELS = CHANNELS;
export type ProviderChannel = Channel;

/** Channels with a list of providers (a default, failover by priority); the others have one provider per type. */
export const LISTED_PROVIDER_CHANNELS = ["email", "sms"] as const satisfies readonly Channel[];

/** Channels a contact replies on, so channel commands (STOP, START, HELP) arrive there. */
export const COMMAND_CHANNELS = ["sms", "chatapp1", "chatapp2"] as const satisfies readonly Channel[];
export type CommandChannel = (typeof COMMAND_CHANNELS)[number];

/** Channels a contact writes back on, whose messages become inbox threads (contract-messaging 11). */
export const INBOX_CHANNELS = ["email", "sms", "chatapp1", "chatapp2"] as const satisfies readonly Channel[];
export type InboxChannel = (typeof INBOX_CHANNELS)[number];
