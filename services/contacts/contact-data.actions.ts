import { actorOf, audit } from "../../lib/audit";
import { defineAction } from "../../lib/define-service";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { updateContact } from "./contact-write";
import {
  ACCESS,
  CONTACTS_PATH,
  CONTACTS_TAGS,
  NoteSchema,
  openapi,
  results,
  schemas,
  StageHistorySchema,
  SuccessSchema,
} from "./contacts.schemas";
import { exportContact } from "./csv-export";
import { gdprDelete, gdprExport } from "./gdpr";
import { chatapp1Link } from "./link";
import { addNote, listNotes } from "./notes.repo";
import { stageHistory } from "./stages.repo";
import { timeline } from "./timeline.repo";

const WS = CONTACTS_PATH;
const tags = CONTACTS_TAGS;
const { read, write, remove } = ACCESS;

/**
 * The contacts service's actions on one contact's data beyond its profile
 * (mixed into `contacts`): export, GDPR, notes, timeline, stage, chat link.
 */
export const contactDataActions = {
  actions: {
    /** One contact as `format` csv (default; the workspace export's columns) or json (profile, notes, stage history). contacts.read. */
    exportOne: defineAction({
      rest: [`GET ${WS}/:contactId/export`, `POST ${WS}/:contactId/export`],
      openapi: { tags, summary: "Export one contact as CSV or JSON", responses: openapi.exportOneResponses },
      ...read,
      params: schemas.exportOne,
      async handler(ctx) {
        const exported = await exportContact(
          workspaceOf(ctx),
          ctx.params.contactId,
          ctx.params.format ?? "csv",
        );
        if (exported.format === "json") return exported.body;
        ctx.meta.$responseType = "text/csv; charset=utf-8";
        ctx.meta.$responseHeaders = { "Content-Disposition": `attachment; filename="${exported.filename}"` };
        return exported.body;
      },
    }),

    /** Everything held about the contact as JSON. contacts.read. */
    gdprExport: defineAction({
      rest: `GET ${WS}/:contactId/gdpr/export`,
      openapi: { tags, summary: "Everything stored about a contact (GDPR access request)" },
      ...read,
      params: schemas.get,
      result: results.gdprExport,
      async handler(ctx) {
        const result = await gdprExport(workspaceOf(ctx), ctx.params.contactId);
        await audit(ctx, "contact.gdpr_exported", { type: "contact", id: ctx.params.contactId });
        return result;
      },
    }),

    /** Erase the contact and its personal data; emits contact.deleted; audited. contacts.delete. */
    gdprDelete: defineAction({
      rest: `DELETE ${WS}/:contactId/gdpr/delete`,
      openapi: { tags, summary: "Erase a contact and its data (GDPR erasure)" },
      ...remove,
      params: schemas.get,
      result: SuccessSchema,
      async handler(ctx) {
        const deleted = await gdprDelete(workspaceOf(ctx), ctx.params.contactId);
        await audit(ctx, "contact.gdpr_deleted", { type: "contact", id: deleted.id });
        return { success: true as const };
      },
    }),

    /** Notes on the contact, newest first, with their author. contacts.read. */
    notesList: defineAction({
      rest: `GET ${WS}/:contactId/notes`,
      openapi: { tags, summary: "List a contact's notes" },
      ...read,
      params: schemas.notesList,
      result: results.notes,
      handler: (ctx) => listNotes(workspaceOf(ctx), ctx.params.contactId, pageRequest(ctx.params)),
    }),

    /** Add a note; the caller is its author. contacts.write. */
    notesCreate: defineAction({
      rest: `POST ${WS}/:contactId/notes`,
      openapi: { tags, summary: "Add a note to a contact" },
      ...write,
      params: schemas.noteCreate,
      status: 201,
      result: NoteSchema,
      handler: (ctx) => addNote(workspaceOf(ctx), ctx.params.contactId, ctx.params.body, actorOf(ctx)),
    }),

    /** Events, notes, stage changes (and messages, form submissions) newest first. contacts.read. */
    timeline: defineAction({
      rest: `GET ${WS}/:contactId/timeline`,
      openapi: { tags, summary: "A contact's timeline of events, notes and changes, newest first" },
      ...read,
      params: schemas.timeline,
      result: results.timeline,
      handler: (ctx) => timeline(workspaceOf(ctx), ctx.params.contactId, pageRequest(ctx.params)),
    }),

    /** The contact's lifecycle stage and its history. contacts.read. */
    stagesGet: defineAction({
      rest: `GET ${WS}/:contactId/stages`,
      openapi: { tags, summary: "A contact's lifecycle stage and its history" },
      ...read,
      params: schemas.get,
      result: StageHistorySchema,
      handler: (ctx) => stageHistory(workspaceOf(ctx), ctx.params.contactId),
    }),

    /** Move the contact to a stage (null clears it), with an optional reason; 201 with the history. contacts.write. */
    stagesSet: defineAction({
      rest: `POST ${WS}/:contactId/stages`,
      openapi: { tags, summary: "Move a contact to a lifecycle stage" },
      ...write,
      params: schemas.stageSet,
      status: 201,
      result: StageHistorySchema,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { contactId, stage, reason } = ctx.params;
        await updateContact(this.broker, ws, contactId, { stage }, actorOf(ctx), {
          reason: reason ?? null,
        });
        return stageHistory(ws, contactId);
      },
    }),

    /** A chatapp1 deep link with a one-time token (24 h) binding the contact to the bot. contacts.write. */
    chatapp1Link: defineAction({
      rest: `GET ${WS}/:contactId/chatapp1-link`,
      openapi: { tags, summary: "A link that connects the contact to the chatapp1 bot" },
      ...write,
      params: schemas.get,
      result: results.link,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const workspace = (await ctx.call("workspaces.get", { workspaceId: ws })) as {
          settings?: { chatapp1?: { botUrl?: unknown } };
        };
        return chatapp1Link(ws, ctx.params.contactId, workspace.settings);
      },
    }),
  },
};
