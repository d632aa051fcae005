import { Type } from "@sinclair/typebox";
import {
  COLUMNS,
  CONTACT_FIELDS,
  CSV_FIELDS,
  CSV_WRITABLE_FIELDS,
  fieldsOfKind,
  RECORD_COLUMN_TYPES,
  recordOf,
  SCALAR_COLUMNS,
  valuesOf,
  writableFieldSchemas,
} from "../../services/contacts/fields";
import { compileParamsChecker, Params } from "../../lib/schema";

/** Everything about a contact's fields derives from the one table in contacts/fields.ts. */
test("columns, CSV order and the upsert's record types come from the table", () => {
  expect(COLUMNS).toMatchObject({
    firstName: "first_name",
    customFields: "custom_fields",
    ownerId: "owner_id",
  });
  expect("score" in COLUMNS).toBe(false);
  expect(CSV_FIELDS).toEqual([
    "email",
    "phone",
    "firstName",
    "lastName",
    "externalId",
    "locale",
    "timezone",
    "country",
    "city",
    "tags",
    "stage",
    "score",
    "companyId",
    "ownerId",
  ]);
  expect(CSV_WRITABLE_FIELDS).toEqual(CSV_FIELDS.filter((f) => f !== "score"));
  expect(SCALAR_COLUMNS).not.toContain("tags");
  expect(RECORD_COLUMN_TYPES).toContain("tags text[]");
  expect(RECORD_COLUMN_TYPES).toContain("custom_fields jsonb");
  expect(RECORD_COLUMN_TYPES.split(", ")).toHaveLength(Object.keys(CONTACT_FIELDS).length - 1);
  expect(fieldsOfKind("json")).toEqual(["attributes", "customFields"]);
});

test("a write's record and a row's values fill what is absent", () => {
  const record = recordOf({ email: "a@b.co", attributes: { a: 1, b: null } }, (o) =>
    Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== null)),
  );
  expect(record).toMatchObject({
    email: "a@b.co",
    phone: null,
    tags: [],
    attributes: { a: 1 },
    custom_fields: {},
  });
  const values = valuesOf({ email: "a@b.co", tags: null, attributes: null, score: 3 } as never);
  expect(values).toMatchObject({ email: "a@b.co", tags: [], attributes: {}, customFields: {}, score: 3 });
});

test("the params schemas take each field's limit", () => {
  const check = compileParamsChecker(
    Params({ ...writableFieldSchemas, extra: Type.Optional(Type.String()) }),
  );
  expect(check({ stage: "x".repeat(100), tags: ["a"], attributes: null })).toBe(true);
  expect(check({ stage: "x".repeat(101) })).toEqual([expect.objectContaining({ field: "stage" })]);
  expect(check({ email: "e".repeat(255) })).toEqual([expect.objectContaining({ field: "email" })]);
});
