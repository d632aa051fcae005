/**
 * `npm run setup -- --email … --password … [--workspace <name>] [--name <owner's name>]`:
 * the first run of an operator (see lib/first-run.ts), on the database
 * `npm start` uses: DATABASE_URL, or the embedded one under DATA_DIR (the
 * running service's server when it runs, else started and stopped here).
 * Standard output is one `export …` line, so `eval "$(npm run -s setup -- …)"`
 * sets USER_ID, WORKSPACE_ID and API_KEY; everything for a person is on
 * standard error.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { ServiceBroker } from "moleculer";
import { shareEmbeddedDatabase } from "../lib/database";
import { toHttpError } from "../lib/errors";
import { describeOutcome, exportLine, firstRun, FirstRunError } from "../lib/first-run";
import { brokerConfig } from "../moleculer.config";

const USAGE =
  "usage: npm run setup -- --email <email> --password <password> [--workspace <name>] [--name <owner's name>]";

/** A refusal in one line: the API's error body for it (a validation error with its fields), as a client would read it. */
function explain(err: unknown): string {
  if (err instanceof FirstRunError) return err.message;
  const { status, body } = toHttpError(err, false);
  if (status >= 500) return String((err as Error)?.message ?? err);
  const fields = (body.details ?? []).map((d) => `${d.field} ${d.message}`);
  return fields.length ? `${body.error}: ${fields.join("; ")}` : body.error;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      email: { type: "string" },
      password: { type: "string" },
      workspace: { type: "string", default: "My workspace" },
      name: { type: "string" },
    },
  });
  if (!values.email || !values.password) {
    console.error(USAGE);
    return 2;
  }
  // Standard output is the export line alone: what the start-up would print (the embedded server's notes) goes to standard error.
  console.log = console.error;
  shareEmbeddedDatabase();
  // The broker `npm start` builds, on its own: with no transporter its calls never leave this process.
  const broker = new ServiceBroker({ ...brokerConfig(), transporter: null, logger: false });
  // As moleculer-runner loads them: compiled under dist/, or the sources under ts-node.
  for (const area of ["auth", "workspaces"]) {
    broker.loadService(path.join(__dirname, "..", "services", area, `${area}.service`));
  }
  try {
    await broker.start();
    const outcome = await firstRun(broker, {
      email: values.email,
      password: values.password,
      workspace: values.workspace!,
      name: values.name,
    });
    for (const line of describeOutcome(outcome)) console.error(line);
    process.stdout.write(`${exportLine(outcome)}\n`);
    return 0;
  } catch (err) {
    console.error(`setup refused: ${explain(err)}`);
    return 1;
  } finally {
    await broker.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`setup failed: ${String((err as Error)?.message ?? err)}`);
    process.exit(1);
  },
);
