import { createReadStream } from "node:fs";
import type { Readable } from "node:stream";
import type { LoggerInstance, ServiceBroker } from "moleculer";
import { validationError } from "../../lib/errors";
import { startJob, type ProgressFn } from "../../lib/jobs";
import { checkInput, issueText, writeContacts } from "./contact-write";
import { assertNoIssues, settleContacts, writeDefinitions } from "./contacts.repo";
import { checkMapping, readCsv } from "./csv-import";
import { hasIdentity } from "./normalize";
import type { ContactWrite } from "./fields";
import { spoolUpload } from "./upload";
import type { ConsentWanted } from "./upsert";
import type { WorkspaceId } from "../../lib/tenancy";

/** The import job: stream the spooled CSV, validate each row, upsert in batches, report bad rows by line. */

export const IMPORT_BATCH = 1000;
/** Enough detail to fix a file; the count stays exact beyond it. */
export const MAX_REPORTED_FAILURES = 10_000;
/** Imports creating this many rows refresh the table statistics (stale ones make the planner skip the search index). */
const ANALYZE_AFTER_ROWS = 5_000;

export interface ImportResult {
  created: number;
  updated: number;
  failed: Array<{ line: number; error: string }>;
  failedCount: number;
  ignoredColumns: string[];
}

export async function importCsv(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  file: string,
  mapping: Record<string, string | null>,
  progress: ProgressFn,
  totalRows: number,
  actor: { actorType: string; actorId: string | null },
): Promise<ImportResult> {
  const defs = await writeDefinitions(workspaceId);
  const result: ImportResult = { created: 0, updated: 0, failed: [], failedCount: 0, ignoredColumns: [] };
  const fail = (line: number, error: string) => {
    result.failedCount += 1;
    if (result.failed.length < MAX_REPORTED_FAILURES) result.failed.push({ line, error });
  };
  let batch: Array<{ line: number; write: ContactWrite; consent?: ConsentWanted }> = [];
  let done = 0;

  const flush = async () => {
    if (!batch.length) return;
    const current = batch;
    batch = [];
    const results = await writeContacts(
      broker,
      workspaceId,
      defs.customFields,
      current.map((b) => b.write),
      { ...actor, reason: "import" },
      current.map((b) => b.consent),
    );
    results.forEach((r, i) => {
      if (r.error) fail(current[i].line, r.error);
      else if (r.row?.inserted) result.created += 1;
      else result.updated += 1;
    });
    await progress(done, Math.max(totalRows, done));
  };

  for await (const item of readCsv(createReadStream(file), mapping)) {
    if (item.kind === "header") {
      result.ignoredColumns = item.plan.ignored;
      continue;
    }
    done += 1;
    if (item.kind === "bad") {
      fail(item.line, item.error);
      continue;
    }
    const { write, issues } = checkInput(item.input, defs, { coerce: true });
    issues.push(...item.issues);
    if (!issues.length && !hasIdentity(write))
      issues.push({ field: "email", message: "a row needs one of email, phone, externalId" });
    if (issues.length) fail(item.line, issueText(issues));
    else batch.push({ line: item.line, write, consent: item.consent });
    if (batch.length >= IMPORT_BATCH) await flush();
  }
  await flush();
  if (result.created >= ANALYZE_AFTER_ROWS) await settleContacts();
  result.failed.sort((a, b) => a.line - b.line);
  return result;
}

/** The `mapping` JSON of an import (query or multipart field); 400 naming `mapping` when malformed. */
export function parseMapping(text: unknown): Record<string, string | null> {
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
  assertNoIssues(issues);
  return mapping;
}

/**
 * `POST {ws}/contacts/import`: spool the streamed body (raw CSV or a
 * multipart `file`), read the mapping (multipart field, else query), and run
 * the import as a job. Answers the job's id.
 */
export async function startImport(
  broker: ServiceBroker,
  logger: LoggerInstance,
  workspaceId: WorkspaceId,
  upload: { body: Readable; contentType?: string; queryMapping?: unknown },
  actor: { actorType: string; actorId: string | null },
): Promise<{ jobId: string }> {
  const queryMapping = parseMapping(upload.queryMapping);
  const spooled = await spoolUpload(upload.body, upload.contentType);
  let mapping: Record<string, string | null>;
  try {
    mapping = spooled.mapping !== undefined ? parseMapping(spooled.mapping) : queryMapping;
  } catch (err) {
    await spooled.cleanup();
    throw err;
  }
  const rows = Math.max(0, spooled.lines - 1);
  const { jobId } = await startJob(
    // Each batch stands on its own and a rerun updates what was written: stopping halfway is safe.
    {
      workspaceId,
      type: "contacts.import",
      createdBy: actor.actorId,
      total: rows,
      cancelPermission: "contacts.write",
    },
    (progress) =>
      importCsv(broker, workspaceId, spooled.file, mapping, progress, rows, actor).finally(spooled.cleanup),
    (err) => logger.error("Contact import failed", err),
  );
  return { jobId };
}
