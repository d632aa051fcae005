import { Type, type TSchema } from "@sinclair/typebox";
import type { Transaction } from "sequelize";
import { query } from "./database";
import { validationError } from "./errors";
import { Component, Int32 } from "./schema";
import type { WorkspaceId } from "./tenancy";

/** The one pagination helper: contract's `page`/`limit` (default 50, max 100, larger clamped). */
export interface PageRequest {
  page: number;
  limit: number;
  offset: number;
}

export interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; totalPages: number };
}

/** Params schema fragment for paginated lists (query strings arrive as text, hence convert). */
export const pageParams = {
  page: { type: "number", integer: true, positive: true, max: 2_147_483_647, convert: true, optional: true },
  limit: { type: "number", integer: true, positive: true, convert: true, optional: true },
} as const;

export function pageRequest(
  params: { page?: number; limit?: number },
  maxLimit = 100,
  defaultLimit = 50,
): PageRequest {
  const page = Math.max(1, Math.floor(params.page ?? 1));
  const limit = Math.min(maxLimit, Math.max(1, Math.floor(params.limit ?? defaultLimit)));
  return { page, limit, offset: (page - 1) * limit };
}

export function pageOf<T>(data: T[], total: number, req: PageRequest): Page<T> {
  return {
    data,
    pagination: { page: req.page, limit: req.limit, total, totalPages: Math.ceil(total / req.limit) },
  };
}

/** A listing statement, so one page of it and its total are asked the same way everywhere. */
export interface ListStatement {
  /** The rows' statement up to ORDER BY: `SELECT … FROM … WHERE …`. */
  select: string;
  /** The ORDER BY list; it ends on a unique key, so pages never overlap. */
  orderBy: string;
  /** A cheaper `FROM … WHERE …` for the total (without the select list's joins); by default `select` itself is counted. */
  countFrom?: string;
}

/**
 * The one list-with-count query: the page's rows (`LIMIT`/`OFFSET` of
 * `page`) and the total of the same filter, run together, each row through
 * `view`. The limit and offset are whole numbers from `pageRequest`, so they
 * are written into the statement and both statements share `bind` (`$2`…,
 * after the workspace, `$1`, as `query` binds it).
 */
export async function selectPage<R extends object, T>(
  workspaceId: WorkspaceId,
  statement: ListStatement,
  bind: unknown[],
  page: PageRequest,
  view: (row: R) => T,
  transaction?: Transaction,
): Promise<Page<T>> {
  const [listed, [{ n }]] = await Promise.all([
    query<R>(
      workspaceId,
      `${statement.select} ORDER BY ${statement.orderBy} LIMIT ${page.limit} OFFSET ${page.offset}`,
      bind,
      transaction,
    ),
    query<{ n: string }>(
      workspaceId,
      `SELECT count(*) AS n ${statement.countFrom ?? `FROM (${statement.select}) listed`}`,
      bind,
      transaction,
    ),
  ]);
  return pageOf(listed.map(view), Number(n), page);
}

/**
 * Turn a `sort` parameter (`field` or `-field`) into an ORDER BY list with `id`
 * as the tie-breaker, so pages never overlap. Unknown fields are a 400.
 */
export function sortOrder(
  sort: string | undefined,
  allowed: Record<string, string>,
  fallback: string,
): Array<[string, "ASC" | "DESC"]> {
  const value = sort?.trim() || fallback;
  const descending = value.startsWith("-");
  const field = descending ? value.slice(1) : value;
  // Own keys only: `__proto__` or `constructor` must not find Object.prototype's members.
  const column = Object.hasOwn(allowed, field) ? allowed[field] : undefined;
  if (!column) {
    throw validationError(`Cannot sort by '${field}'`, [
      {
        field: "sort",
        message: `must be one of ${Object.keys(allowed).join(", ")} (prefix - for descending)`,
      },
    ]);
  }
  const direction = descending ? "DESC" : "ASC";
  return column === "id"
    ? [["id", direction]]
    : [
        [column, direction],
        ["id", direction],
      ];
}

/** `page` and `limit` for TypeBox params (lib/schema.ts): whole numbers that fit the database; a larger `limit` is clamped by `pageRequest`. */
export const PageQuery = {
  page: Type.Optional(Int32({ minimum: 1, description: "1-based page number (default 1)" })),
  limit: Type.Optional(
    Int32({ minimum: 1, description: "Items per page (default 50; more than 100 is clamped to 100)" }),
  ),
};

export const PaginationSchema = Component(
  "Pagination",
  Type.Object({
    page: Type.Integer(),
    limit: Type.Integer(),
    total: Type.Integer(),
    totalPages: Type.Integer(),
  }),
);

/** The contract's paginated envelope around `item`. */
export const Paginated = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), pagination: PaginationSchema });
