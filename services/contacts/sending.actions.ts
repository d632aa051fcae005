import { defineAction } from "../../lib/define-service";
import { workspaceOf } from "../../lib/tenancy";
import { sendingResults, sendingSchemas } from "./contacts.schemas";
import { evaluateSegments } from "./effects";
import { contactForAddress, contactsForAddresses } from "./contact-write";
import { identifyContact } from "./identify";
import { contactByAddress, contactsByIds, existingContactIds } from "./contacts.repo";
import { dncReasons } from "./dnc.repo";
import { applyPreferences } from "./sending";
import { readRetry } from "../../lib/resilience";

/** A new sender's contact: its address (a chat id is an attribute) and the names a chat gives. */
function addressInput(a: { type: string; value: string; firstName?: string; lastName?: string }) {
  const address =
    a.type === "chatapp1ChatId" ? { attributes: { chatapp1ChatId: a.value } } : { [a.type]: a.value };
  return {
    ...address,
    ...(a.firstName && { firstName: a.firstName }),
    ...(a.lastName && { lastName: a.lastName }),
  };
}

/**
 * Internal actions of the send path and the public surface (mixed into
 * `contacts`): no routes, called by messages and forms with the workspace in meta.
 */
export const sendingActions = {
  actions: {
    /** Contacts by id, for a batch of sends (missing ids are left out). */
    forSend: defineAction({
      params: sendingSchemas.forSend,
      result: sendingResults.forSend,
      retryPolicy: readRetry(),
      handler: (ctx) => contactsByIds(workspaceOf(ctx), ctx.params.contactIds),
    }),

    /** Which of `ids` are contacts of the workspace (another area checking a reference). */
    existingIds: defineAction({
      params: sendingSchemas.existingIds,
      result: sendingResults.existingIds,
      handler: (ctx) => existingContactIds(workspaceOf(ctx), ctx.params.ids),
    }),

    /** The contact a visitor's input names (by email, else externalId), updated or created; blank fields are left out. */
    identify: defineAction({
      params: sendingSchemas.identify,
      result: sendingResults.identify,
      handler: (ctx) =>
        identifyContact(
          ctx.broker,
          workspaceOf(ctx),
          ctx.params.contact,
          ctx.params.consent,
          ctx.params.source,
        ),
    }),

    /** The contact an email or phone belongs to, or null. */
    byAddress: defineAction({
      params: sendingSchemas.byAddress,
      result: sendingResults.byAddress,
      handler: (ctx) => contactByAddress(workspaceOf(ctx), ctx.params.type, ctx.params.value),
    }),

    /**
     * The contact an inbound message's sender address belongs to, else one created with it (and the names
     * a chat gives); one contact per address even when its first messages arrive together.
     */
    forAddress: defineAction({
      params: sendingSchemas.forAddress,
      result: sendingResults.forAddress,
      async handler(ctx) {
        const { type, value } = ctx.params;
        const { contact, created } = await contactForAddress(
          ctx.broker,
          workspaceOf(ctx),
          { type, value },
          addressInput(ctx.params),
        );
        return { contactId: contact.id, created };
      },
    }),

    /** `forAddress` for a batch of inbound senders, answers in order; a sender new to the batch is created once. */
    forAddresses: defineAction({
      params: sendingSchemas.forAddresses,
      result: sendingResults.forAddresses,
      async handler(ctx) {
        const found = await contactsForAddresses(
          ctx.broker,
          workspaceOf(ctx),
          ctx.params.addresses.map((a) => ({
            address: { type: a.type, value: a.value },
            input: addressInput(a),
          })),
        );
        return found.map(({ contact, created }) => ({ contactId: contact.id, created }));
      },
    }),

    /** Which addresses are on the do-not-contact list, with the entry's reason. */
    dncReasons: defineAction({
      params: sendingSchemas.dncReasons,
      result: sendingResults.dncReasons,
      handler: (ctx) => dncReasons(workspaceOf(ctx), ctx.params.addresses),
    }),

    /** A contact's own choices (unsubscribe, preference centre, double opt-in); only real changes emit. */
    applyPreferences: defineAction({
      params: sendingSchemas.applyPreferences,
      result: sendingResults.applyPreferences,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { contactId, ...changes } = ctx.params;
        const result = await applyPreferences(ws, contactId, changes);
        await evaluateSegments(this.broker, ws, [contactId]);
        return result;
      },
    }),
  },
};
