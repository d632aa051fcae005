import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT, sourceFiles } from "../helpers/source-files";
import { pageOf, pageRequest, sortOrder } from "../../lib/pagination";

describe("pageRequest", () => {
  test("defaults: page 1, limit 50", () => {
    expect(pageRequest({})).toEqual({ page: 1, limit: 50, offset: 0 });
  });

  test("a larger limit is clamped to the maximum, a custom maximum and default too", () => {
    expect(pageRequest({ limit: 1000 })).toMatchObject({ limit: 100 });
    expect(pageRequest({ limit: 100 })).toMatchObject({ limit: 100 });
    expect(pageRequest({ limit: 500 }, 200)).toMatchObject({ limit: 200 });
    expect(pageRequest({}, 200, 50)).toMatchObject({ limit: 50 });
    expect(pageRequest({}, 10, 5)).toMatchObject({ limit: 5 });
  });

  test("page and limit below 1 become 1; fractions are floored", () => {
    expect(pageRequest({ page: 0, limit: 0 })).toEqual({ page: 1, limit: 1, offset: 0 });
    expect(pageRequest({ page: -3, limit: -5 })).toEqual({ page: 1, limit: 1, offset: 0 });
    expect(pageRequest({ page: 2.7, limit: 10.9 })).toEqual({ page: 2, limit: 10, offset: 10 });
  });

  test("offset is (page - 1) * limit", () => {
    expect(pageRequest({ page: 3, limit: 20 })).toEqual({ page: 3, limit: 20, offset: 40 });
  });
});

describe("pageOf", () => {
  test("wraps rows in the contract's envelope", () => {
    expect(pageOf(["a", "b"], 123, pageRequest({ limit: 50 }))).toEqual({
      data: ["a", "b"],
      pagination: { page: 1, limit: 50, total: 123, totalPages: 3 },
    });
  });

  test("totalPages is 0 for an empty list and exact on a boundary", () => {
    expect(pageOf([], 0, pageRequest({})).pagination.totalPages).toBe(0);
    expect(pageOf([], 100, pageRequest({ limit: 50 })).pagination.totalPages).toBe(2);
    expect(pageOf([], 101, pageRequest({ limit: 50 })).pagination.totalPages).toBe(3);
  });
});

describe("sortOrder", () => {
  const allowed = { createdAt: "created_at", email: "email", id: "id" };

  test("ascending and descending with id as tie-breaker in the same direction", () => {
    expect(sortOrder("email", allowed, "-createdAt")).toEqual([
      ["email", "ASC"],
      ["id", "ASC"],
    ]);
    expect(sortOrder("-createdAt", allowed, "email")).toEqual([
      ["created_at", "DESC"],
      ["id", "DESC"],
    ]);
  });

  test("the fallback applies when sort is missing or blank", () => {
    expect(sortOrder(undefined, allowed, "-createdAt")).toEqual([
      ["created_at", "DESC"],
      ["id", "DESC"],
    ]);
    expect(sortOrder("  ", allowed, "email")[0]).toEqual(["email", "ASC"]);
  });

  test("sorting by id needs no tie-breaker", () => {
    expect(sortOrder("-id", allowed, "email")).toEqual([["id", "DESC"]]);
  });

  test.each(["password", "-secret", "created_at", "-", "email; DROP TABLE contacts"])(
    "an unknown field (%s) is a 400 naming sort",
    (sort) => {
      let thrown: any;
      try {
        sortOrder(sort, allowed, "email");
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toMatchObject({ code: 400, type: "VALIDATION_ERROR" });
      expect(thrown.data.details).toEqual([
        { field: "sort", message: expect.stringContaining("createdAt, email, id") },
      ]);
    },
  );
});

describe("one list-with-count query", () => {
  // A page with its total is asked only through selectPage (lib/pagination.ts): no other file writes a page's
  // OFFSET or a window count, so a listing cannot drift from the contract's envelope or its totals.
  const HAND_PAGING = /\bOFFSET \$\{|\bOFFSET \$\d|count\(\*\) OVER \(\)/;

  test("no file pages by hand", () => {
    const byHand = ["services", "lib", "mixins"]
      .flatMap((dir) => sourceFiles(dir))
      .filter((file) => file !== "lib/pagination.ts")
      .filter((file) => HAND_PAGING.test(readFileSync(path.join(ROOT, file), "utf8")));
    expect(byHand).toEqual([]);
  });
});
