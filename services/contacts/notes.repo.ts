import { QueryTypes } from "sequelize";
import { newId } from "../../lib/crypto";
import { database } from "../../lib/database";
import { selectPage, type Page, type PageRequest } from "../../lib/pagination";
import { found } from "../../lib/errors";
import { getRow } from "./contacts.repo";

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
  author_name: string | null;
  created_at: Date;
}

const view = (r: NoteRow): NoteView => ({
  id: r.id,
  contactId: r.contact_id,
  body: r.body,
  author: { type: r.author_type, id: r.author_id, name: r.author_name },
  createdAt: new Date(r.created_at).toISOString(),
});

const SELECT = `SELECT n.id, n.contact_id, n.body, n.author_type, n.author_id, n.created_at,
                       CASE WHEN n.author_type = 'user' THEN u.name ELSE NULL END AS author_name
                  FROM contact_notes n LEFT JOIN users u ON n.author_type = 'user' AND u.id = n.author_id`;

export async function listNotes(
  workspaceId: string,
  contactId: string,
  page: PageRequest,
): Promise<Page<NoteView>> {
  found(await getRow(workspaceId, contactId), "Contact");
  return selectPage(
    {
      select: `${SELECT} WHERE n.workspace_id = $1 AND n.contact_id = $2`,
      orderBy: "n.created_at DESC, n.id DESC",
      countFrom: "FROM contact_notes WHERE workspace_id = $1 AND contact_id = $2",
    },
    [workspaceId, contactId],
    page,
    view,
  );
}

export async function addNote(
  workspaceId: string,
  contactId: string,
  body: string,
  author: { actorType: string; actorId: string | null },
): Promise<NoteView> {
  found(await getRow(workspaceId, contactId), "Contact");
  const sequelize = await database();
  const id = newId();
  await sequelize.query(
    `INSERT INTO contact_notes (id, workspace_id, contact_id, author_type, author_id, body) VALUES ($1, $2, $3, $4, $5, $6)`,
    { bind: [id, workspaceId, contactId, author.actorType, author.actorId, body] },
  );
  const rows = await sequelize.query<NoteRow>(`${SELECT} WHERE n.id = $1`, {
    bind: [id],
    type: QueryTypes.SELECT,
  });
  return view(rows[0]);
}
