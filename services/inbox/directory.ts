import type { Context, ServiceBroker } from "moleculer";
import { MicroBatcher } from "../../lib/batcher";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import type { ContactBrief } from "./inbox.schemas";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * What the inbox asks other areas, each through its owner's action: the
 * workspace's zone, its members, contacts' summaries, a contact filter,
 * and a member's notification.
 */

export type Caller = Context | ServiceBroker;
const brokerOf = (from: Caller): ServiceBroker => ("broker" in from ? from.broker : from);

/** The workspace's `settings.timezone` (UTC when unset). */
export async function workspaceZone(from: Caller, ws: WorkspaceId): Promise<string> {
  const workspace = await systemCall<{ settings?: { timezone?: string } }>(from, ws, "workspaces.get", {
    workspaceId: ws,
  });
  return workspace.settings?.timezone || "UTC";
}

/** Those of `userIds` who are members of the workspace, in the order given. */
export async function membersAmong(from: Caller, ws: WorkspaceId, userIds: string[]): Promise<string[]> {
  if (!userIds.length) return [];
  const members = await memberReader.add({ from, ws, userIds });
  return userIds.filter((id) => members.has(id));
}

/** A question for `workspaces.memberUserIds`, with who asks it. */
interface MembersAsk {
  from: Caller;
  ws: WorkspaceId;
  userIds: string[];
}

/**
 * Concurrent questions (a batch's new threads, each assigned by the same
 * round robin) go as one call per workspace; each asker gets the members
 * found of all the ids asked. A failed call fails each of its askers.
 */
const memberReader = new MicroBatcher(
  async (asks: MembersAsk[]): Promise<Array<Set<string>>> => {
    const found = new Map<WorkspaceId, Promise<Set<string>>>();
    for (const ask of asks)
      if (!found.has(ask.ws)) {
        const userIds = [...new Set(asks.flatMap((a) => (a.ws === ask.ws ? a.userIds : [])))];
        found.set(
          ask.ws,
          systemCall<string[]>(ask.from, ask.ws, "workspaces.memberUserIds", {
            workspaceId: ask.ws,
            userIds,
          }).then((members) => new Set(members)),
        );
      }
    return Promise.all(asks.map((ask) => found.get(ask.ws)!));
  },
  { maxBatch: 100, lanes: 1 },
);

/** Summaries of contacts, one call for a whole page of threads. */
export async function contactBriefs(
  from: Caller,
  ws: WorkspaceId,
  contactIds: string[],
): Promise<Map<string, ContactBrief>> {
  const ids = [...new Set(contactIds)];
  if (!ids.length) return new Map();
  const contacts = await systemCall<Array<Record<string, unknown> & { id: string }>>(
    from,
    ws,
    "contacts.forSend",
    {
      contactIds: ids,
    },
  );
  const text = (value: unknown) => (typeof value === "string" ? value : null);
  return new Map(
    contacts.map((c) => [
      c.id,
      {
        id: c.id,
        email: text(c.email),
        phone: text(c.phone),
        firstName: text(c.firstName),
        lastName: text(c.lastName),
      },
    ]),
  );
}

/** Whether the contact matches a segment filter now (an assignment rule's condition). */
export async function contactMatches(
  from: Caller,
  ws: WorkspaceId,
  contactId: string,
  filter: unknown,
): Promise<boolean> {
  const { matches } = await systemCall<{ matches: boolean }>(from, ws, "segments.matches", {
    contactId,
    filter,
  });
  return matches;
}

/** A notification for members (`{ws}/notifications`), made once per key; nothing when the CRM area is not deployed. */
export async function notifyMembers(
  from: Caller,
  ws: WorkspaceId,
  userIds: string[],
  note: { type: string; title: string; body?: string; data: Record<string, unknown>; dedupeKey: string },
): Promise<void> {
  if (!userIds.length || !isServiceAvailable(brokerOf(from), "crm")) return;
  await systemCall(from, ws, "crm.notifyMembers", { userIds, ...note });
}
