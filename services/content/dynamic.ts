import type { DynamicContentView } from "./content.schemas";

/**
 * Each contact's content of each slot (contract 10): the first variant
 * whose filter matches the contact, else the slot's default; a slot the
 * workspace does not have renders nothing. `matching` answers which of
 * some contacts a filter matches (segments.matchingContacts), asked once
 * per variant for the contacts still undecided.
 */
export async function contentFor(
  slots: DynamicContentView[],
  contactIds: string[],
  matching: (filter: Record<string, unknown>, contactIds: string[]) => Promise<string[]>,
): Promise<Record<string, Record<string, string>>> {
  const byContact: Record<string, Record<string, string>> = Object.fromEntries(
    contactIds.map((id) => [id, {}]),
  );
  for (const slot of slots) {
    let undecided = contactIds;
    for (const variant of slot.variants) {
      if (!undecided.length) break;
      const matched = new Set(await matching(variant.filter, undecided));
      for (const id of undecided) if (matched.has(id)) byContact[id][slot.slot] = variant.content;
      undecided = undecided.filter((id) => !matched.has(id));
    }
    for (const id of undecided) byContact[id][slot.slot] = slot.defaultContent;
  }
  return byContact;
}
