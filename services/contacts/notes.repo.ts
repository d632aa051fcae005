import { newId } from "../../lib/crypto";
import { query } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { found } from "../../lib/errors";
import { userNames } from "../auth/for-names";
import { getRow } from "./contacts.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Notes on a contact, with their author (a user, an API key or the system). */

export interface NoteView {
  id: string;
  contactId: string;
  body: string;
  author: { type: string; id: string | null; name: string | null };
  createdAt: string;
}

interface NoteRow {
  id: string;
  contact_id: string;
  body: string;
  author_type: string;
  author_id: string | null;
  created_at: Date;
}

/** The notes with their authors' names: a user's, read from the auth area; API keys and the system have none. */
async function views(rows: NoteRow[]): Promise<NoteView[]> {
  const names = await userNames(
    rows.flatMap((r) => (r.author_type === "user" && r.author_id ? [r.author_id] : [])),
  );
  return rows.map((r) => ({
    id: r.id,
    contactId: r.contact_id,
    body: r.body,
    author: {
      type: r.author_type,
      id: r.author_id,
      name: r.author_type === "user" && r.author_id ? (names.get(r.author_id) ?? null) : null,
    },
    createdAt: new Date(r.created_at).toISOString(),
  }));
}

const SELECT = `SELECT n.id, n.contact_id, n.body, n.author_type, n.author_id, n.created_at FROM contact_notes n`;

export async function listNotes(
  workspaceId: WorkspaceId,
  contactId: string,
  page: PageRequest,
): Promise<Page<NoteView>> {
  found(await getRow(workspaceId, contactId), "Contact");
  const listed = await selectPage(
    workspaceId,
    {
      select: `${SELECT} WHERE n.workspace_id = $1 AND n.contact_id = $2`,
      orderBy: "n.created_at DESC, n.id DESC",
      countFrom: "FROM contact_notes WHERE workspace_id = $1 AND contact_id = $2",
    },
    [contactId],
    page,
    (row: NoteRow) => row,
  );
  return { ...listed, data: await views(listed.data) };
}

export async function addNote(
  workspaceId: WorkspaceId,
  contactId: string,
  body: string,
  author: { actorType: string; actorId: string | null },
): Promise<NoteView> {
  found(await getRow(workspaceId, contactId), "Contact");
  const id = newId();
  await query(
    workspaceId,
    `INSERT INTO contact_notes (id, workspace_id, contact_id, author_type, author_id, body) VALUES ($2, $1, $3, $4, $5, $6)`,
    [id, contactId, author.actorType, author.actorId, body],
  );
  const rows = await query<NoteRow>(workspaceId, `${SELECT} WHERE n.workspace_id = $1 AND n.id = $2`, [id]);
  const [note] = await views(rows);
  return note;
}
