import type { BusinessHours } from "./business-hours";
import { isOpen } from "./business-hours";

/**
 * The inbox's pure decisions: which rule an inbound message matches and how
 * a reply is written for the send path. Unit-tested; the engines (assignment.ts, auto-replies.ts,
 * replies.ts) do the I/O around them.
 */

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Whether any keyword occurs in `text` as whole words, any case; no keywords match any text. */
export function keywordMatch(keywords: readonly string[], text: string): boolean {
  if (!keywords.length) return true;
  return keywords.some((keyword) =>
    new RegExp(`(^|[^\\p{L}\\p{N}_])${escapeRegExp(keyword.trim())}($|[^\\p{L}\\p{N}_])`, "iu").test(text),
  );
}

/** Whether business hours (if any) hold `at` in the zone: rules limited to them apply only then. */
export const withinHours = (hours: BusinessHours | null | undefined, at: Date, zone: string): boolean =>
  !hours || isOpen(hours, at, zone);

/**
 * A member's text as a send's content, which the send path renders as
 * Liquid: every `{` prints itself, so what was written (or what a contact's
 * data filled in) is sent as it reads, never run as a template.
 */
export const literalLiquid = (text: string): string => text.replace(/\{/g, '{{ "{" }}');

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** `Re: ` once before a subject. */
export const replySubject = (subject: string | null): string =>
  !subject ? "Re: your message" : /^re:/i.test(subject.trim()) ? subject.trim() : `Re: ${subject.trim()}`;

/** The content of a reply on its channel (contract 2's shapes). */
export function replyContent(channel: string, body: string, subject: string | null): Record<string, unknown> {
  if (channel === "email") {
    const html = escapeHtml(body).replace(/\r?\n/g, "<br>");
    return {
      subject: literalLiquid(replySubject(subject)),
      text: literalLiquid(body),
      html: `<p>${literalLiquid(html)}</p>`,
    };
  }
  if (channel === "sms") return { body: literalLiquid(body) };
  return { text: literalLiquid(body) };
}

/** A provider's message id as mail headers write it (`<id>`) and as we store it (bare). */
export const bareMessageId = (id: string): string => id.trim().replace(/^<|>$/g, "");

/** In-Reply-To and References of an email answering a message with `refs` (its own References) and id. */
export function replyHeaders(answered: {
  providerMessageId: string | null;
  refs: string[];
}): Record<string, string> {
  if (!answered.providerMessageId) return {};
  const id = `<${bareMessageId(answered.providerMessageId)}>`;
  const chain = [...answered.refs.map((r) => `<${bareMessageId(r)}>`), id].slice(-20);
  return { "In-Reply-To": id, References: chain.join(" ") };
}
