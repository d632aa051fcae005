import { templateError } from "../../lib/errors";
import { checkLiquid, renderContent, TemplateFault } from "../templates/render";
import { systemCall } from "../../lib/system-call";
import type { Caller } from "./directory";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Canned responses' bodies are Liquid over `contact.*` and `member.*`
 * (contract-messaging 11), rendered by the templates area's engine.
 */

/** A body must parse (400 TEMPLATE_ERROR naming `body` and its line). */
export function checkCannedBody(body: string): void {
  try {
    checkLiquid({ body }, "");
  } catch (err) {
    if (err instanceof TemplateFault) throw templateError(err.details.map((d) => ({ ...d, field: "body" })));
    throw err;
  }
}

/** The body for this contact, written by this member. */
export async function renderCanned(
  from: Caller,
  ws: WorkspaceId,
  body: string,
  contactId: string,
  userId: string | null,
) {
  const [contact, members] = await Promise.all([
    systemCall<Record<string, unknown>>(from, ws, "contacts.get", { workspaceId: ws, contactId }),
    systemCall<Array<{ userId: string; role: string; user: { id: string; name: string; email: string } }>>(
      from,
      ws,
      "workspaces.listMembers",
      { workspaceId: ws },
    ),
  ]);
  const member = members.find((m) => m.userId === userId);
  const scope = {
    contact,
    member: member
      ? { id: member.userId, name: member.user.name, email: member.user.email, role: member.role }
      : {},
  };
  try {
    return String((await renderContent({ body }, scope)).body ?? "");
  } catch (err) {
    if (err instanceof TemplateFault)
      throw templateError(err.details.map((d) => ({ ...d, field: "cannedResponseId" })));
    throw err;
  }
}
