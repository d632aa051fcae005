/** Positional bind parameters for hand-built SQL: `q.p(value)` appends and returns `$n`. */
export class Binds {
  readonly values: unknown[] = [];
  p(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** Escape LIKE wildcards so user text matches literally. */
export function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** PostgreSQL unique violation (code 23505) with the violated constraint, from Sequelize or pg errors. */
export function uniqueViolation(err: unknown): string | null {
  const e = err as {
    name?: string;
    parent?: { code?: string; constraint?: string };
    original?: { code?: string; constraint?: string };
    code?: string;
    constraint?: string;
  };
  const inner = e?.parent ?? e?.original ?? e;
  if (inner?.code === "23505") return inner.constraint ?? "unique";
  return null;
}

/** PostgreSQL's "data exception" (SQLSTATE class 22: a value out of range, text it cannot encode): that row's fault alone. */
export function dataException(err: unknown): string | null {
  const e = err as {
    parent?: { code?: string; message?: string };
    original?: { code?: string };
    code?: string;
    message?: string;
  };
  const inner = e?.parent ?? e?.original ?? e;
  return typeof inner?.code === "string" && inner.code.startsWith("22")
    ? String(e?.message ?? "invalid value")
    : null;
}
