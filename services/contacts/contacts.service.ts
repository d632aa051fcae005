import { Readable } from "node:stream";
import { Type } from "@sinclair/typebox";
import { requirePermission } from "../../lib/access";
import { actorOf, audit } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { found, notFound } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { Nullable } from "../../lib/schema";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { OutboxRelayMixin } from "../../mixins/outbox-relay";
import { runBulk } from "./bulk";
import { contactDataActions } from "./contact-data.actions";
import { setConsent } from "./consent";
import { createContact, removeContacts, updateContact } from "./contact-write";
import * as search from "./contact-search.repo";
import * as repo from "./contacts.repo";
import {
  ACCESS,
  CONTACTS_PATH,
  CONTACTS_TAGS,
  ConsentSchema,
  ContactSchema,
  JobAcceptedSchema,
  openapi,
  results,
  schemas,
  SuccessSchema,
} from "./contacts.schemas";
import { exportCsv } from "./csv-export";
import { dncActions } from "./dnc.actions";
import { sendingActions } from "./sending.actions";
import { duplicateGroups, duplicatesOf } from "./duplicates.repo";
import { evaluateSegments } from "./effects";
import { filterOf, inputOf } from "./filters";
import { startImport } from "./import";
import { ingestContacts } from "./ingest";
import { linkChat } from "./link";
import { mergeContacts } from "./merge";

const WS = CONTACTS_PATH;
const { read, write, remove } = ACCESS;
const tags = CONTACTS_TAGS;

/** Contacts: profiles, consent, do-not-contact, and the insights over them. */
export default defineService({
  name: "contacts",
  // Do-not-contact and one contact's data (notes, timeline, stages, export, GDPR, link) are actions of this service too.
  mixins: [DatabaseMixin, OutboxRelayMixin, dncActions, contactDataActions, sendingActions],
  settings: { rest: "/" },

  actions: {
    /** Paginated contacts with search, sort and filters. contacts.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List contacts (search, filters, sort; paginated)" },
      ...read,
      params: schemas.list,
      result: results.list,
      handler: (ctx) =>
        search.listContacts(workspaceOf(ctx), filterOf(ctx.params), ctx.params.sort, pageRequest(ctx.params)),
    }),

    /** Create a contact (409 on a taken email or externalId). contacts.write. */
    create: defineAction({
      rest: `POST ${WS}`,
      openapi: { tags, summary: "Create a contact" },
      ...write,
      params: schemas.create,
      status: 201,
      result: ContactSchema,
      async handler(ctx) {
        return createContact(this.broker, workspaceOf(ctx), inputOf(ctx.params));
      },
    }),

    /** Attribute keys in use, most used first, with counts and JSON types. contacts.read. */
    attributeKeys: defineAction({
      rest: `GET ${WS}/attribute-keys`,
      openapi: { tags, summary: "List the attribute keys used by the workspace's contacts" },
      ...read,
      params: schemas.workspaceOnly,
      result: results.attributeKeys,
      handler: (ctx) => search.attributeKeys(workspaceOf(ctx)),
    }),

    /** Contact counts by country and city (`?country=` narrows the cities). contacts.read. */
    geo: defineAction({
      rest: `GET ${WS}/geo`,
      openapi: { tags, summary: "Count contacts by country and city" },
      ...read,
      params: schemas.geo,
      result: results.geo,
      handler: (ctx) => search.geoCounts(workspaceOf(ctx), ctx.params.country),
    }),

    /** Upload a CSV (raw text/csv or multipart `file`, optional `mapping`); 202 {jobId}. contacts.write. */
    import: defineAction({
      // A `stream` route: moleculer-web hands over the request itself, so the CSV is streamed, never buffered.
      rest: { method: "POST", path: `${WS}/import`, type: "stream" },
      ...write,
      status: 202,
      result: JobAcceptedSchema,
      openapi: openapi.import,
      handler(ctx) {
        const query = (ctx.meta as { $params?: { mapping?: unknown } }).$params ?? {};
        const body = ctx.params;
        if (!(body instanceof Readable))
          throw new Error("contacts.import takes the request stream (a stream route)");
        const upload = { body, contentType: ctx.meta.contentType, queryMapping: query.mapping };
        return startImport(this.broker, this.logger, workspaceOf(ctx), upload, actorOf(ctx));
      },
    }),

    /** Contacts matching the list filters as a streamed CSV (id order). contacts.read. */
    exportAll: defineAction({
      rest: `GET ${WS}/export`,
      ...read,
      params: schemas.export,
      openapi: openapi.exportAll,
      async handler(ctx) {
        const stream = await exportCsv(workspaceOf(ctx), filterOf(ctx.params));
        ctx.meta.$responseType = "text/csv; charset=utf-8";
        ctx.meta.$responseHeaders = { "Content-Disposition": 'attachment; filename="contacts.csv"' };
        return stream;
      },
    }),

    /** Tag, untag, delete, set a stage or an attribute on ids or a filter; ≤1,000 ids inline, else a job. contacts.write (+ contacts.delete to delete). */
    bulk: defineAction({
      rest: `POST ${WS}/bulk`,
      openapi: { tags, summary: "Tag, untag, delete, set a stage or an attribute on many contacts" },
      ...write,
      params: schemas.bulk,
      result: results.bulk,
      alsoAnswers: { 202: JobAcceptedSchema },
      async handler(ctx) {
        const { action, ids, filter, value } = ctx.params;
        if (action === "delete")
          requirePermission(ctx.meta, "contacts.delete", "Bulk delete needs the contacts.delete permission");
        const request = { action, ids, filter: filter && filterOf(filter), value };
        const outcome = await runBulk(this.broker, this.logger, workspaceOf(ctx), request, actorOf(ctx));
        if ("jobId" in outcome) ctx.meta.$statusCode = 202;
        return outcome;
      },
    }),

    /** Upsert up to 1,000 contacts by email or externalId (emailOptOut supported). contacts.write. */
    ingest: defineAction({
      rest: `POST ${WS}/ingest`,
      openapi: { tags, summary: "Create or update up to 1,000 contacts in one call" },
      ...write,
      params: schemas.ingest,
      result: results.ingest,
      handler(ctx) {
        return ingestContacts(this.broker, workspaceOf(ctx), ctx.params.contacts, actorOf(ctx));
      },
    }),

    /** Duplicate groups across the workspace (same email key, phone or full name). contacts.read. */
    duplicates: defineAction({
      rest: `GET ${WS}/duplicates`,
      openapi: { tags, summary: "Groups of likely duplicates (same email key, phone or full name)" },
      ...read,
      params: schemas.duplicates,
      result: results.duplicates,
      handler: (ctx) => duplicateGroups(workspaceOf(ctx), pageRequest(ctx.params)),
    }),

    /** Merge duplicates into the primary in one transaction; answers the surviving contact. contacts.write + contacts.delete. */
    merge: defineAction({
      rest: `POST ${WS}/merge`,
      openapi: { tags, summary: "Merge duplicates into one contact" },
      ...write,
      params: schemas.merge,
      result: ContactSchema,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        requirePermission(
          ctx.meta,
          "contacts.delete",
          "Merging deletes the duplicates: it needs the contacts.delete permission",
        );
        const { contact, removed } = await mergeContacts(ws, ctx.params.primaryId, ctx.params.duplicateIds);
        await evaluateSegments(this.broker, ws, [contact.id]);
        await audit(
          ctx,
          "contact.merged",
          { type: "contact", id: contact.id },
          { merged: removed.map((r) => r.id) },
        );
        return contact;
      },
    }),

    /** One contact. contacts.read. */
    get: defineAction({
      rest: `GET ${WS}/:contactId`,
      openapi: { tags, summary: "Get a contact" },
      ...read,
      params: schemas.get,
      result: ContactSchema,
      handler: async (ctx) => found(await repo.getContact(workspaceOf(ctx), ctx.params.contactId), "Contact"),
    }),

    /** Change a contact: attributes/customFields merge key by key (null removes), tags replace. contacts.write. */
    update: defineAction({
      rest: `PATCH ${WS}/:contactId`,
      openapi: { tags, summary: "Update a contact (attributes and custom fields merge key by key)" },
      ...write,
      params: schemas.update,
      result: ContactSchema,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { after } = await updateContact(
          this.broker,
          ws,
          ctx.params.contactId,
          inputOf(ctx.params),
          actorOf(ctx),
        );
        return after;
      },
    }),

    /** Delete a contact and what hangs off it. contacts.delete. */
    remove: defineAction({
      rest: `DELETE ${WS}/:contactId`,
      openapi: { tags, summary: "Delete a contact" },
      ...remove,
      params: schemas.get,
      result: SuccessSchema,
      async handler(ctx) {
        const deleted = await removeContacts(workspaceOf(ctx), [ctx.params.contactId]);
        if (!deleted.length) throw notFound("Contact");
        return { success: true as const };
      },
    }),

    /** Consent per channel (every channel present). contacts.read. */
    consentGet: defineAction({
      rest: `GET ${WS}/:contactId/consent`,
      openapi: { tags, summary: "A contact's consent per channel" },
      ...read,
      params: schemas.get,
      result: ConsentSchema,
      handler: async (ctx) =>
        found(await repo.getContact(workspaceOf(ctx), ctx.params.contactId), "Contact").consent,
    }),

    /** Opt a channel (or `all`) in or out; an opt-out emits `unsubscribe.<channel>`. contacts.write. */
    consentPut: defineAction({
      rest: `PUT ${WS}/:contactId/consent`,
      openapi: { tags, summary: "Opt a contact in or out of a channel" },
      ...write,
      params: schemas.consentPut,
      result: ConsentSchema,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { contactId, channel, status, source } = ctx.params;
        const contact = await setConsent(ws, contactId, channel, status, source ?? "api");
        await evaluateSegments(this.broker, ws, [contact.id]);
        return contact.consent;
      },
    }),

    /** Duplicate candidates of one contact, best first, with the reasons. contacts.read. */
    contactDuplicates: defineAction({
      rest: `GET ${WS}/:contactId/duplicates`,
      openapi: { tags, summary: "Likely duplicates of one contact" },
      ...read,
      params: schemas.get,
      result: results.contactDuplicates,
      handler: (ctx) => duplicatesOf(workspaceOf(ctx), ctx.params.contactId),
    }),

    /** Internal (crm, after deleting a company): its contacts stay, unlinked; answers how many. */
    unlinkCompany: defineAction({
      params: schemas.unlinkCompany,
      result: Type.Object({ unlinked: Type.Integer() }),
      handler: async (ctx) => ({
        unlinked: await repo.unlinkCompany(workspaceOf(ctx), ctx.params.companyId),
      }),
    }),

    /** Internal (chatapp1 inbound, `/start <token>`): bind the chat to the token's contact, once; null when the token is unknown, used or expired. */
    linkChat: defineAction({
      params: schemas.linkChat,
      result: Nullable(ContactSchema),
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const contact = await linkChat(this.broker, ws, ctx.params.token, ctx.params.chatId);
        if (contact) await evaluateSegments(this.broker, ws, [contact.id]);
        return contact;
      },
    }),
  },
});
