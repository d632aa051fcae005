import type { Readable } from "node:stream";
import { stringify as stringifySync } from "csv-stringify/sync";
import type { ServiceSchema } from "moleculer";
import { decideAccess } from "../../lib/access";
import { actorOf } from "../../lib/audit";
import { audit } from "../../lib/audit";
import { forbidden, validationError } from "../../lib/errors";
import { startJob } from "../../lib/jobs";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { OutboxRelayMixin } from "../../mixins/outbox-relay";
import { Contact } from "../../models";
import { setConsent } from "./consent";
import { createContact, removeContacts, updateContact } from "./contact-write";
import * as repo from "./contacts.repo";
import { contactFields, schemas } from "./contacts.schemas";
import type { ContactInput } from "./normalize";
import { addDnc, blockedValues, listDnc, removeDnc } from "./dnc";
import { evaluateSegments } from "./effects";
import { applyBulk, checkBulkValue, type BulkAction } from "./bulk";
import { checkMapping } from "./csv-import";
import { exportCsv } from "./csv-export";
import { importCsv } from "./import";
import { ingestContacts } from "./ingest";
import { spoolUpload } from "./upload";
import { contactRow, headerRow } from "./csv-export";
import { duplicateGroups, duplicatesOf } from "./duplicates";
import { gdprDelete, gdprExport } from "./gdpr";
import { deepLink, issueLinkToken, redeemLinkToken } from "./link";
import { mergeContacts } from "./merge";
import { addNote, listNotes } from "./notes";
import { stageHistory } from "./stages";
import { timeline } from "./timeline";

/** Validated params arrive typed by the schema; handlers read them through this alias. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const WS = "/workspaces/:workspaceId/contacts";
const read = { auth: "any", permission: "contacts.read" } as const;
const write = { auth: "any", permission: "contacts.write" } as const;
const remove = { auth: "any", permission: "contacts.delete" } as const;
/** Bulk sets up to this size run in the request; larger ones (and filters) run as a job. */
const BULK_INLINE_MAX = 1000;
/** moleculer-web hands a `stream` route the request itself (no body parser): the CSV is streamed, never buffered. */
const IMPORT_ROUTE = {
  method: "POST" as const,
  path: "/workspaces/:workspaceId/contacts/import",
  type: "stream",
};

export const filterOf = (p: Record<string, unknown>): repo.ContactFilter => ({
  search: p.search as string | undefined,
  tag: p.tag as string | undefined,
  stage: p.stage as string | undefined,
  country: p.country as string | undefined,
  city: p.city as string | undefined,
  createdFrom: p.createdFrom as Date | undefined,
  createdTo: p.createdTo as Date | undefined,
  attributes: p.attributes as Record<string, unknown> | undefined,
  customFields: p.customFields as Record<string, unknown> | undefined,
});

/** The writable contact fields of validated params (path params left out). */
export function inputOf(params: Record<string, unknown>): ContactInput {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(contactFields)) if (params[key] !== undefined) input[key] = params[key];
  return input as ContactInput;
}

/** The `mapping` JSON of an import (query or multipart field); 400 naming `mapping` when malformed. */
function parseMappingText(text: unknown): Record<string, string | null> {
  if (text === undefined || text === "") return {};
  let parsed: unknown;
  try {
    parsed = typeof text === "string" ? JSON.parse(text) : text;
  } catch {
    throw validationError("mapping must be JSON", [
      { field: "mapping", message: "must be a JSON object of CSV column → contact field" },
    ]);
  }
  const { mapping, issues } = checkMapping(parsed);
  repo.assertNoIssues(issues);
  return mapping;
}

/** Small CSV bodies (one contact) in one piece. */
function stringifyRows(rows: string[][]): string {
  return stringifySync(rows);
}

function* chunks<T>(items: T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/** Contacts: profiles, consent, do-not-contact, and the insights over them. */
const ContactsService: ServiceSchema = {
  name: "contacts",
  mixins: [DbMixin(Contact), OutboxRelayMixin],
  settings: { rest: "/" },

  actions: {
    /** Paginated contacts with search, sort and filters. contacts.read. */
    list: {
      rest: `GET ${WS}`,
      openapi: { tags: ["Contacts"], summary: "List contacts (search, filters, sort; paginated)" },
      ...read,
      params: schemas.list,
      handler: (ctx: Ctx) =>
        repo.listContacts(workspaceOf(ctx), filterOf(ctx.params), ctx.params.sort, pageRequest(ctx.params)),
    },

    /** Create a contact (409 on a taken email or externalId). contacts.write. */
    create: {
      rest: `POST ${WS}`,
      openapi: { tags: ["Contacts"], summary: "Create a contact" },
      ...write,
      params: schemas.create,
      async handler(ctx: Ctx) {
        const contact = await createContact(this.broker, workspaceOf(ctx), inputOf(ctx.params));
        await evaluateSegments(this.broker, workspaceOf(ctx), [contact.id]);
        ctx.meta.$statusCode = 201;
        return contact;
      },
    },

    /** Attribute keys in use, most used first, with counts and JSON types. contacts.read. */
    attributeKeys: {
      rest: `GET ${WS}/attribute-keys`,
      openapi: { tags: ["Contacts"], summary: "List the attribute keys used by the workspace's contacts" },
      ...read,
      params: schemas.workspaceOnly,
      handler: (ctx: Ctx) => repo.attributeKeys(workspaceOf(ctx)),
    },

    /** Contact counts by country and city (`?country=` narrows the cities). contacts.read. */
    geo: {
      rest: `GET ${WS}/geo`,
      openapi: { tags: ["Contacts"], summary: "Count contacts by country and city" },
      ...read,
      params: schemas.geo,
      handler: (ctx: Ctx) => repo.geoCounts(workspaceOf(ctx), ctx.params.country),
    },

    /** The do-not-contact list, newest first. contacts.read. */
    dncList: {
      rest: `GET ${WS}/dnc`,
      openapi: { tags: ["Contacts"], summary: "List do-not-contact entries" },
      ...read,
      params: schemas.dncList,
      handler: (ctx: Ctx) => listDnc(workspaceOf(ctx), ctx.params.type, pageRequest(ctx.params)),
    },

    /** Add an email or phone to the do-not-contact list (409 when present). contacts.write. */
    dncAdd: {
      rest: `POST ${WS}/dnc`,
      openapi: { tags: ["Contacts"], summary: "Add a do-not-contact entry (email or phone)" },
      ...write,
      params: schemas.dncCreate,
      async handler(ctx: Ctx) {
        const entry = await addDnc(
          workspaceOf(ctx),
          ctx.params.type,
          ctx.params.value,
          ctx.params.reason ?? null,
          actorOf(ctx).actorId,
        );
        ctx.meta.$statusCode = 201;
        return entry;
      },
    },

    /** Remove `?type=&value=` from the do-not-contact list. contacts.delete. */
    dncRemove: {
      rest: `DELETE ${WS}/dnc`,
      openapi: { tags: ["Contacts"], summary: "Remove a do-not-contact entry" },
      ...remove,
      params: schemas.dncDelete,
      async handler(ctx: Ctx) {
        await removeDnc(workspaceOf(ctx), ctx.params.type, ctx.params.value);
        return { success: true };
      },
    },

    /** Upload a CSV (raw text/csv or multipart `file`, optional `mapping`); 202 {jobId}. contacts.write. */
    import: {
      rest: IMPORT_ROUTE,
      ...write,
      openapi: {
        summary: "Import contacts from CSV (update-or-create by email) as a job",
        description:
          "Body: raw `text/csv`, or `multipart/form-data` with the field `file` (and optionally `mapping`, sent before `file`). " +
          "`mapping` (query parameter or multipart field) is JSON: CSV column → contact field (`email`, `firstName`, ..., " +
          "`attributes.<key>`, `customFields.<key>`, `consent.<channel>`, or null to ignore). Columns named like fields map themselves. " +
          "A `consent.<channel>` cell is `opted_in` or `opted_out` (stored with source `import`; an opt-out emits `unsubscribe.<channel>`); " +
          "`unknown` or empty leaves the stored consent as it is. At most 50 MiB. " +
          "The job's result is `{created, updated, failed: [{line, error}], failedCount, ignoredColumns}` (the header is line 1).",
        requestBody: {
          required: true,
          content: {
            "text/csv": { schema: { type: "string" } },
            "multipart/form-data": {
              schema: {
                type: "object",
                properties: { file: { type: "string", format: "binary" }, mapping: { type: "string" } },
                required: ["file"],
              },
            },
          },
        },
        responses: {
          "202": {
            description: "The import job",
            content: {
              "application/json": { schema: { type: "object", properties: { jobId: { type: "string" } } } },
            },
          },
        },
      },
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const query = ((ctx.meta as { $params?: Record<string, unknown> }).$params ?? {}) as Record<
          string,
          unknown
        >;
        const queryMapping = parseMappingText(query.mapping);
        const spooled = await spoolUpload(ctx.params as Readable, ctx.meta.contentType);
        let mapping: Record<string, string | null>;
        try {
          mapping = spooled.mapping !== undefined ? parseMappingText(spooled.mapping) : queryMapping;
        } catch (err) {
          await spooled.cleanup();
          throw err;
        }
        const { jobId } = await startJob(
          {
            workspaceId: ws,
            type: "contacts.import",
            createdBy: actorOf(ctx).actorId,
            total: Math.max(0, spooled.lines - 1),
          },
          (progress) =>
            importCsv(
              this.broker,
              ws,
              spooled.file,
              mapping,
              progress,
              Math.max(0, spooled.lines - 1),
              actorOf(ctx),
            ).finally(spooled.cleanup),
          (err) => this.logger.error("Contact import failed", err),
        );
        ctx.meta.$statusCode = 202;
        return { jobId };
      },
    },

    /** Contacts matching the list filters as a streamed CSV (id order). contacts.read. */
    exportAll: {
      rest: `GET ${WS}/export`,
      ...read,
      params: schemas.export,
      openapi: {
        summary: "Export contacts as CSV",
        description:
          "Streams `text/csv` filtered like the list: a header row of field names, then one row per contact; " +
          "`consent.<channel>` columns hold `opted_in`, `opted_out` or `unknown`, and `attributes` and `customFields` " +
          "are flattened as `attributes.<key>` and `customFields.<key>`.",
        responses: { "200": { description: "CSV", content: { "text/csv": { schema: { type: "string" } } } } },
      },
      async handler(ctx: Ctx) {
        const stream = await exportCsv(workspaceOf(ctx), filterOf(ctx.params));
        ctx.meta.$responseType = "text/csv; charset=utf-8";
        ctx.meta.$responseHeaders = { "Content-Disposition": 'attachment; filename="contacts.csv"' };
        return stream;
      },
    },

    /** Tag, untag, delete, set a stage or an attribute on ids or a filter; ≤1,000 ids inline, else a job. contacts.write (+ contacts.delete to delete). */
    bulk: {
      rest: `POST ${WS}/bulk`,
      openapi: { tags: ["Contacts"], summary: "Tag, untag, delete, set a stage or an attribute on many contacts" },
      ...write,
      params: schemas.bulk,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const action: BulkAction = ctx.params.action;
        if (action === "delete") {
          const decision = decideAccess(remove, ctx.meta.principal, { workspaceId: ws, role: ctx.meta.role });
          if (!decision.allow) throw forbidden("Bulk delete needs the contacts.delete permission");
        }
        const { ids, filter } = ctx.params;
        if ((ids === undefined) === (filter === undefined)) {
          throw validationError("Give either ids or filter", [
            { field: "ids", message: "exactly one of ids and filter is required" },
          ]);
        }
        const value = await checkBulkValue(ws, action, ctx.params.value);
        const actor = actorOf(ctx);
        if (ids && ids.length <= BULK_INLINE_MAX) {
          return {
            affected: await applyBulk(this.broker, ws, action, value, [...new Set<string>(ids)], actor),
          };
        }
        const { jobId } = await startJob(
          { workspaceId: ws, type: "contacts.bulk", createdBy: actor.actorId, total: ids?.length },
          async (progress) => {
            let affected = 0;
            let done = 0;
            const batches = ids
              ? chunks([...new Set<string>(ids)], BULK_INLINE_MAX)
              : repo.idsMatching(ws, filterOf(filter), BULK_INLINE_MAX);
            for await (const batch of batches) {
              affected += await applyBulk(this.broker, ws, action, value, batch, actor);
              done += batch.length;
              await progress(done);
            }
            return { action, affected };
          },
          (err) => this.logger.error("Bulk contact change failed", err),
        );
        ctx.meta.$statusCode = 202;
        return { jobId };
      },
    },

    /** Upsert up to 1,000 contacts by email or externalId (emailOptOut supported). contacts.write. */
    ingest: {
      rest: `POST ${WS}/ingest`,
      openapi: { tags: ["Contacts"], summary: "Create or update up to 1,000 contacts in one call" },
      ...write,
      params: schemas.ingest,
      handler(ctx: Ctx) {
        return ingestContacts(this.broker, workspaceOf(ctx), ctx.params.contacts, actorOf(ctx));
      },
    },

    /** Duplicate groups across the workspace (same email key, phone or full name). contacts.read. */
    duplicates: {
      rest: `GET ${WS}/duplicates`,
      openapi: { tags: ["Contacts"], summary: "Groups of likely duplicates (same email key, phone or full name)" },
      ...read,
      params: schemas.duplicates,
      handler: (ctx: Ctx) => duplicateGroups(workspaceOf(ctx), pageRequest(ctx.params)),
    },

    /** Merge duplicates into the primary in one transaction; answers the surviving contact. contacts.write + contacts.delete. */
    merge: {
      rest: `POST ${WS}/merge`,
      openapi: { tags: ["Contacts"], summary: "Merge duplicates into one contact" },
      ...write,
      params: schemas.merge,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const decision = decideAccess(remove, ctx.meta.principal, { workspaceId: ws, role: ctx.meta.role });
        if (!decision.allow)
          throw forbidden("Merging deletes the duplicates: it needs the contacts.delete permission");
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
    },

    /** One contact. contacts.read. */
    get: {
      rest: `GET ${WS}/:contactId`,
      openapi: { tags: ["Contacts"], summary: "Get a contact" },
      ...read,
      params: schemas.get,
      handler: (ctx: Ctx) => repo.getContact(workspaceOf(ctx), ctx.params.contactId),
    },

    /** Change a contact: attributes/customFields merge key by key (null removes), tags replace. contacts.write. */
    update: {
      rest: `PATCH ${WS}/:contactId`,
      openapi: { tags: ["Contacts"], summary: "Update a contact (attributes and custom fields merge key by key)" },
      ...write,
      params: schemas.update,
      async handler(ctx: Ctx) {
        const { after } = await updateContact(
          this.broker,
          workspaceOf(ctx),
          ctx.params.contactId,
          inputOf(ctx.params),
          actorOf(ctx),
        );
        await evaluateSegments(this.broker, workspaceOf(ctx), [after.id]);
        return after;
      },
    },

    /** Delete a contact and what hangs off it. contacts.delete. */
    remove: {
      rest: `DELETE ${WS}/:contactId`,
      openapi: { tags: ["Contacts"], summary: "Delete a contact" },
      ...remove,
      params: schemas.get,
      async handler(ctx: Ctx) {
        const deleted = await removeContacts(workspaceOf(ctx), [ctx.params.contactId]);
        if (!deleted.length) throw repo.contactNotFound();
        return { success: true };
      },
    },

    /** Consent per channel (every channel present). contacts.read. */
    consentGet: {
      rest: `GET ${WS}/:contactId/consent`,
      openapi: { tags: ["Contacts"], summary: "A contact's consent per channel" },
      ...read,
      params: schemas.get,
      handler: async (ctx: Ctx) => (await repo.getContact(workspaceOf(ctx), ctx.params.contactId)).consent,
    },

    /** Opt a channel (or `all`) in or out; an opt-out emits `unsubscribe.<channel>`. contacts.write. */
    consentPut: {
      rest: `PUT ${WS}/:contactId/consent`,
      openapi: { tags: ["Contacts"], summary: "Opt a contact in or out of a channel" },
      ...write,
      params: schemas.consentPut,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const source = ctx.params.source ?? "api";
        const contact = await setConsent(
          ws,
          ctx.params.contactId,
          ctx.params.channel,
          ctx.params.status,
          source,
        );
        await evaluateSegments(this.broker, ws, [contact.id]);
        return contact.consent;
      },
    },

    /** Duplicate candidates of one contact, best first, with the reasons. contacts.read. */
    contactDuplicates: {
      rest: `GET ${WS}/:contactId/duplicates`,
      openapi: { tags: ["Contacts"], summary: "Likely duplicates of one contact" },
      ...read,
      params: schemas.contactDuplicates,
      handler: (ctx: Ctx) => duplicatesOf(workspaceOf(ctx), ctx.params.contactId),
    },

    /** One contact as a CSV row (same columns as the workspace export). contacts.read. */
    exportOne: {
      rest: `GET ${WS}/:contactId/export`,
      openapi: { tags: ["Contacts"], summary: "Export one contact as a CSV row" },
      ...read,
      params: schemas.exportOne,
      handler(ctx: Ctx) {
        return this.exportContact(ctx, ctx.params.format ?? "csv");
      },
    },

    /** One contact exported as `format` csv (default) or json (profile, notes, stage history). contacts.read. */
    exportOnePost: {
      rest: `POST ${WS}/:contactId/export`,
      openapi: { tags: ["Contacts"], summary: "Export one contact as CSV or JSON (profile, notes, stage history)" },
      ...read,
      params: schemas.exportOne,
      handler(ctx: Ctx) {
        return this.exportContact(ctx, ctx.params.format ?? "csv");
      },
    },

    /** Everything held about the contact as JSON. contacts.read. */
    gdprExport: {
      rest: `GET ${WS}/:contactId/gdpr/export`,
      openapi: { tags: ["Contacts"], summary: "Everything stored about a contact (GDPR access request)" },
      ...read,
      params: schemas.get,
      async handler(ctx: Ctx) {
        const result = await gdprExport(workspaceOf(ctx), ctx.params.contactId);
        await audit(ctx, "contact.gdpr_exported", { type: "contact", id: ctx.params.contactId });
        return result;
      },
    },

    /** Erase the contact and its personal data; emits contact.deleted; audited. contacts.delete. */
    gdprDelete: {
      rest: `DELETE ${WS}/:contactId/gdpr/delete`,
      openapi: { tags: ["Contacts"], summary: "Erase a contact and its data (GDPR erasure)" },
      ...remove,
      params: schemas.get,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const deleted = await gdprDelete(ws, ctx.params.contactId);
        await audit(ctx, "contact.gdpr_deleted", { type: "contact", id: deleted.id });
        return { success: true };
      },
    },

    /** Notes on the contact, newest first, with their author. contacts.read. */
    notesList: {
      rest: `GET ${WS}/:contactId/notes`,
      openapi: { tags: ["Contacts"], summary: "List a contact's notes" },
      ...read,
      params: schemas.notesList,
      handler: (ctx: Ctx) => listNotes(workspaceOf(ctx), ctx.params.contactId, pageRequest(ctx.params)),
    },

    /** Add a note; the caller is its author. contacts.write. */
    notesCreate: {
      rest: `POST ${WS}/:contactId/notes`,
      openapi: { tags: ["Contacts"], summary: "Add a note to a contact" },
      ...write,
      params: schemas.noteCreate,
      async handler(ctx: Ctx) {
        const note = await addNote(workspaceOf(ctx), ctx.params.contactId, ctx.params.body, actorOf(ctx));
        ctx.meta.$statusCode = 201;
        return note;
      },
    },

    /** Events, notes, stage changes (and messages, form submissions) newest first. contacts.read. */
    timeline: {
      rest: `GET ${WS}/:contactId/timeline`,
      openapi: { tags: ["Contacts"], summary: "A contact's timeline of events, notes and changes, newest first" },
      ...read,
      params: schemas.timeline,
      handler: (ctx: Ctx) => timeline(workspaceOf(ctx), ctx.params.contactId, pageRequest(ctx.params)),
    },

    /** The contact's lifecycle stage and its history. contacts.read. */
    stagesGet: {
      rest: `GET ${WS}/:contactId/stages`,
      openapi: { tags: ["Contacts"], summary: "A contact's lifecycle stage and its history" },
      ...read,
      params: schemas.get,
      handler: (ctx: Ctx) => stageHistory(workspaceOf(ctx), ctx.params.contactId),
    },

    /** Move the contact to a stage (null clears it), with an optional reason; 201 with the history. contacts.write. */
    stagesSet: {
      rest: `POST ${WS}/:contactId/stages`,
      openapi: { tags: ["Contacts"], summary: "Move a contact to a lifecycle stage" },
      ...write,
      params: schemas.stageSet,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const { after, stageChanged } = await updateContact(
          this.broker,
          ws,
          ctx.params.contactId,
          { stage: ctx.params.stage },
          actorOf(ctx),
          { reason: ctx.params.reason ?? null },
        );
        if (stageChanged) await evaluateSegments(this.broker, ws, [after.id]);
        ctx.meta.$statusCode = 201;
        return stageHistory(ws, ctx.params.contactId);
      },
    },

    /** A chatapp1 deep link with a one-time token (24 h) binding the contact to the bot. contacts.write. */
    chatapp1Link: {
      rest: `GET ${WS}/:contactId/chatapp1-link`,
      openapi: { tags: ["Contacts"], summary: "A link that connects the contact to the chatapp1 bot" },
      ...write,
      params: schemas.get,
      async handler(ctx: Ctx) {
        const ws = workspaceOf(ctx);
        const workspace = (await ctx.call("workspaces.get", { workspaceId: ws })) as {
          settings?: { chatapp1?: { botUrl?: unknown } };
        };
        const botUrl = workspace.settings?.chatapp1?.botUrl;
        if (typeof botUrl !== "string" || !/^https?:\/\//.test(botUrl)) {
          throw validationError(
            "The chatapp1 bot is not configured: set the workspace setting chatapp1.botUrl",
            [{ field: "settings.chatapp1.botUrl", message: "must be the bot's http(s) URL" }],
          );
        }
        const { token, expiresAt } = await issueLinkToken(ws, ctx.params.contactId, "chatapp1");
        return { url: deepLink(botUrl, token), token, expiresAt };
      },
    },

    /** Internal (every sender, before a send): which of `emails`/`phones` are on the do-not-contact list. */
    dncBlocked: {
      params: {
        emails: { type: "array", items: "string", optional: true },
        phones: { type: "array", items: "string", optional: true },
      },
      handler: (ctx: Ctx) =>
        blockedValues(workspaceOf(ctx), ctx.params.emails ?? [], ctx.params.phones ?? []),
    },

    /** Internal (chat bot inbound): the contact a one-time link token binds, once; null when unknown, used or expired. */
    redeemLinkToken: {
      params: { token: { type: "string", max: 200 }, channel: { type: "string", max: 50 } },
      handler: (ctx: Ctx) => redeemLinkToken(ctx.params.token, ctx.params.channel),
    },
  },

  methods: {
    /** One contact as CSV or as JSON with its notes and stage history. */
    async exportContact(ctx: Ctx, format: "csv" | "json") {
      const ws = workspaceOf(ctx);
      const contact = await repo.getContact(ws, ctx.params.contactId);
      if (format === "json") {
        const [notes, stages] = await Promise.all([
          listNotes(ws, contact.id, pageRequest({ limit: 100 })),
          stageHistory(ws, contact.id),
        ]);
        return { contact, notes: notes.data, stageHistory: stages.history };
      }
      const columns = {
        attributes: Object.keys(contact.attributes).sort(),
        customFields: Object.keys(contact.customFields).sort(),
      };
      ctx.meta.$responseType = "text/csv; charset=utf-8";
      ctx.meta.$responseHeaders = {
        "Content-Disposition": `attachment; filename="contact-${contact.id}.csv"`,
      };
      return stringifyRows([headerRow(columns), contactRow(contact, columns)]);
    },
  },
};

export default ContactsService;
