import { createHash } from "node:crypto";

/**
 * The external tool's list member (Mailchimp Marketing API v3) and how it
 * maps to our contact, both ways. Pure: the wire is in client.ts.
 */

/** A list member as `GET /3.0/lists/{listId}/members` answers it (the fields we read). */
export interface RemoteMember {
  email_address?: unknown;
  status?: unknown;
  merge_fields?: Record<string, unknown> | null;
  tags?: Array<{ name?: unknown }> | null;
}

/** `PUT /3.0/lists/{listId}/members/{hash}`: create or update the member. */
export interface MemberUpsert {
  email_address: string;
  status_if_new: "subscribed" | "unsubscribed";
  merge_fields: Record<string, string>;
}

/** Remote fields and the contact fields they fill (preview's `mapping`). */
export const FIELD_MAPPING = [
  { remote: "email_address", local: "email" },
  { remote: "merge_fields.FNAME", local: "firstName" },
  { remote: "merge_fields.LNAME", local: "lastName" },
  { remote: "merge_fields.PHONE", local: "phone" },
  { remote: "tags", local: "tags" },
  { remote: "status", local: "consent.email" },
] as const;

const MERGE = { firstName: "FNAME", lastName: "LNAME", phone: "PHONE" } as const;

/** The member hash of the wire: md5 of the lowercase email, hex. */
export const subscriberHash = (email: string): string =>
  createHash("md5").update(email.trim().toLowerCase()).digest("hex");

const text = (value: unknown): string | null =>
  typeof value === "string" && value.trim() ? value.trim() : null;

/** A member as the preview shows it. */
export function sampleOf(member: RemoteMember) {
  const merge = member.merge_fields ?? {};
  return {
    email: text(member.email_address) ?? "",
    firstName: text(merge[MERGE.firstName]),
    lastName: text(merge[MERGE.lastName]),
    phone: text(merge[MERGE.phone]),
    status: typeof member.status === "string" ? member.status : "",
    tags: remoteTags(member),
  };
}

function remoteTags(member: RemoteMember): string[] {
  return (member.tags ?? []).map((t) => text(t?.name)).filter((name): name is string => name !== null);
}

/**
 * What an import writes for a member: its fields (blank ones left out),
 * remote tags plus the import's own, and the email consent its status
 * means: `subscribed` opted in, `unsubscribed` and `cleaned` opted out (so
 * they are never mailed); other statuses (pending, transactional,
 * archived) leave consent as it is.
 */
export function contactOf(member: RemoteMember, extraTags: string[]) {
  const { email: address, firstName, lastName, phone } = sampleOf(member);
  const email = address || null;
  const tags = [...new Set([...remoteTags(member), ...extraTags])];
  const consent =
    member.status === "subscribed"
      ? { email: "opted_in" as const }
      : member.status === "unsubscribed" || member.status === "cleaned"
        ? { email: "opted_out" as const }
        : undefined;
  return { contact: { email, firstName, lastName, phone, ...(tags.length ? { tags } : {}) }, consent };
}

/** The contact fields a push reads. */
export interface PushedContact {
  email: string | null;
  firstName: string | null;
  lastName: string | null;
  phone: string | null;
  consent?: Record<string, { status?: string | null } | undefined> | null;
}

/**
 * A contact as the member upsert sends it; null without an email. A new
 * member is subscribed unless the contact opted out of email (email here
 * needs no opt-in, messages/checks.ts): the remote status of an existing
 * member is left as it is.
 */
export function memberOf(contact: PushedContact): MemberUpsert | null {
  if (!contact.email) return null;
  const merge_fields: Record<string, string> = {};
  for (const [local, remote] of Object.entries(MERGE) as Array<[keyof typeof MERGE, string]>) {
    const value = contact[local];
    if (value) merge_fields[remote] = value;
  }
  return {
    email_address: contact.email,
    status_if_new: contact.consent?.email?.status === "opted_out" ? "unsubscribed" : "subscribed",
    merge_fields,
  };
}
