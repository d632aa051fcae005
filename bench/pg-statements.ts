import { Client } from "pg";

/**
 * What the `pg` clients of this process send while counting (every area of a bench runs in its
 * process): statements, commits (explicit `COMMIT`s plus statements sent outside a transaction, each
 * its own commit), and statements by text. `SET`, `SAVEPOINT` and `RELEASE` are not counted; a client
 * passed to `ignore` (the bench's own probe) is not either.
 */
export interface StatementCount {
  statements: number;
  commits: number;
  byText: Map<string, number>;
}

const counted: StatementCount = { statements: 0, commits: 0, byText: new Map() };
let counting = false;
const inTransaction = new WeakSet<object>();
const ignored = new WeakSet<object>();
const clientQuery = Client.prototype.query as (...args: unknown[]) => unknown;

Client.prototype.query = function (this: Client, ...args: unknown[]) {
  if (counting && !ignored.has(this)) {
    const first = args[0] as string | { text?: string };
    const text = (typeof first === "string" ? first : (first?.text ?? "")).trim();
    if (/^(START TRANSACTION|BEGIN)/i.test(text)) inTransaction.add(this);
    else if (/^(COMMIT|ROLLBACK)/i.test(text)) {
      inTransaction.delete(this);
      if (/^COMMIT/i.test(text)) counted.commits += 1;
    } else if (!/^(SAVEPOINT|RELEASE|SET)/i.test(text)) {
      counted.statements += 1;
      if (!inTransaction.has(this)) counted.commits += 1;
      const key = text.replace(/\s+/g, " ").slice(0, 110);
      counted.byText.set(key, (counted.byText.get(key) ?? 0) + 1);
    }
  }
  return clientQuery.apply(this, args);
} as typeof Client.prototype.query;

/** Start counting from zero. */
export function startCounting(): void {
  counted.statements = 0;
  counted.commits = 0;
  counted.byText.clear();
  counting = true;
}

/** Stop counting; answers what was counted since `startCounting`. */
export function stopCounting(): StatementCount {
  counting = false;
  return { statements: counted.statements, commits: counted.commits, byText: new Map(counted.byText) };
}

/** Statements of `client` are not counted. */
export function ignoreClient(client: Client): void {
  ignored.add(client);
}
