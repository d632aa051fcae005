import { requires } from "../../lib/access";
import { found } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { renderableOf, SAMPLE_CONTACT, type Renderable } from "./compose";
import { dynamicSlotsOf } from "./render";
import * as repo from "./templates.repo";

/** What the templates service and its action mixins share: routes, access, and the render's inputs. */

export const WS = "/workspaces/:workspaceId/templates";
export const tags = ["Templates"];
export const ACCESS = {
  read: requires("templates.read"),
  write: requires("templates.write"),
  remove: requires("templates.delete"),
} as const;

interface WorkspaceInfo {
  name: string;
  slug: string;
  settings?: { defaultLocale?: unknown };
}

/** What a render needs from other areas: the workspace, the contact (or the sample one) and its dynamic content. */
export async function renderContext(ctx: AppContext, contactId?: string, template?: Renderable) {
  const ws = workspaceOf(ctx);
  const [workspace, contact] = await Promise.all([
    systemCall<WorkspaceInfo>(ctx, ws, "workspaces.get", { workspaceId: ws }),
    contactId
      ? systemCall<Record<string, unknown> & { id: string }>(ctx, ws, "contacts.get", {
          workspaceId: ws,
          contactId,
        })
      : Promise.resolve(SAMPLE_CONTACT),
  ]);
  const defaultLocale =
    typeof workspace.settings?.defaultLocale === "string" ? workspace.settings.defaultLocale : "en";
  const slots = template && contactId ? dynamicSlotsOf(template) : [];
  const dynamic =
    slots.length && isServiceAvailable(ctx.broker, "content")
      ? (
          await systemCall<Record<string, Record<string, string>>>(ctx, ws, "content.dynamicFor", {
            contactIds: [contact.id],
            slots,
          })
        )[contact.id as string]
      : {};
  return { workspace: { name: workspace.name, slug: workspace.slug }, contact, defaultLocale, dynamic };
}

/** A stored template as the renderer takes it. */
export async function renderable(ws: WorkspaceId, templateId: string): Promise<Renderable> {
  return renderableOf(found(await repo.resolveTemplate(ws, templateId), "Template"));
}

/** Whether the messages service answers here (A/B statistics read its records). */
export const messagesAvailable = (ctx: AppContext) => isServiceAvailable(ctx.broker, "messages");
