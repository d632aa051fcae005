import type { Channel } from "../../../lib/channels";
import type { Content } from "../../templates/render";

/**
 * What every provider client takes and answers. The send path (messages'
 * sender) renders, checks and records; a client only speaks its provider's
 * wire.
 */

export interface Outgoing {
  /** Also the idempotency key for providers that take one: a send retried after a crash is not sent twice. */
  messageId: string;
  channel: Channel;
  to: string;
  content: Content;
  /** Email: the sender (the template's, else `settings.sender`); null when neither names one. */
  from?: { email: string; name: string | null } | null;
  replyTo?: string | null;
  /** Email headers (List-Unsubscribe, List-Unsubscribe-Post). */
  headers: Record<string, string>;
}

export interface Accepted {
  providerMessageId: string;
  /** SMS: the parts the provider split the text into, as it reports them. */
  segments?: number | null;
}

/**
 * A provider's refusal: `transient` ones (429, 5xx, the network) are retried
 * with backoff, the others fail the message, except a refusal because the
 * recipient opted out with the provider itself, which suppresses it with
 * `suppression` as the reason (no fault of the send). `message` carries the
 * provider's own code and text, never a credential.
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly transient: boolean,
    readonly suppression: "unsubscribed" | null = null,
    /** A transient refusal's wait the provider asked for (Telegram's `retry_after`); the retry is no sooner. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

/** One recipient of a batched send: its message, and what fills the shared body's holes for it. */
export interface BatchRecipient {
  message: Outgoing;
  html: string[];
  text: string[] | null;
}

/** Emails of one template, locale, variant and sender in one request: a shared body cut at its holes (clients/batch.ts). */
export interface BatchSend {
  from: { email: string; name: string | null };
  replyTo: string | null;
  html: string[];
  text: string[] | null;
  recipients: BatchRecipient[];
}

export interface ProviderClient {
  /** The provider's id; null for `log`. */
  id: string | null;
  type: string;
  send(message: Outgoing): Promise<Accepted>;
  /** Many recipients in one request; answers each one's acceptance in order. */
  sendBatch?(batch: BatchSend): Promise<Accepted[]>;
  /** Most recipients, and most bytes of one recipient's holes, one batched request may carry. */
  batchLimits?: { recipients: number; holeBytes: number };
  /** Ends pooled connections (SMTP). */
  close?(): Promise<void>;
}

/** A file sent with an email (`content.attachments`), its bytes base64. */
export interface Attachment {
  filename: string;
  contentType: string;
  content: string;
}

/** The attachments of an email's content (checked when the content was saved). */
export const attachmentsOf = (content: Outgoing["content"]): Attachment[] =>
  Array.isArray(content.attachments) ? (content.attachments as Attachment[]) : [];

/** What every email client sends: the sender (else a permanent error saying where to set one) and the parts. */
/**
 * The Message-ID we give an email: our message id at the sender's domain, so
 * a reply's In-Reply-To (or a bounce quoting it) names the message whatever
 * id the provider keeps for it.
 */
export const ourMessageId = (messageId: string, fromEmail: string): string =>
  `<${messageId}@${fromEmail.split("@")[1] ?? "localhost"}>`;

export function emailParts(message: Outgoing): {
  from: { email: string; name: string | null };
  subject: string;
  text: string | null;
  html: string | null;
  attachments: Attachment[];
} {
  if (!message.from)
    throw new ProviderError(
      "No sender address: set the template's fromEmail or the workspace's settings.sender.fromEmail",
      false,
    );
  const part = (value: unknown) => (typeof value === "string" && value ? value : null);
  const { subject, text, html } = message.content;
  return {
    from: message.from,
    subject: part(subject) ?? "",
    text: part(text),
    html: part(html),
    attachments: attachmentsOf(message.content),
  };
}
