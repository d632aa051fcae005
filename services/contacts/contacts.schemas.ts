import { pageParams } from "../../lib/pagination";
import { CONSENT_CHANNELS } from "./contacts.repo";
import { CUSTOM_FIELD_TYPES } from "./custom-fields";

/** Params schemas of the contacts actions (also the OpenAPI description). Unknown fields are stripped. */

const str = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;

/** Writable contact fields; normalisation (E.164, IANA zone, BCP 47, lower-cased email) happens in normalize.ts. */
export const contactFields = {
  email: str(254),
  phone: str(50),
  firstName: str(255),
  lastName: str(255),
  externalId: str(255),
  locale: str(35),
  timezone: str(64),
  country: str(255),
  city: str(255),
  tags: { type: "array", items: { type: "string", max: 100 }, max: 200, optional: true, nullable: true },
  attributes: { type: "object", optional: true, nullable: true },
  customFields: { type: "object", optional: true, nullable: true },
  stage: str(100),
  companyId: str(255),
  ownerId: str(255),
} as const;

const ws = { workspaceId: "string" } as const;
const contactPath = { workspaceId: "string", contactId: { type: "string", max: 64 } } as const;

/** List/export filters: `attributes[plan]=pro` and `customFields[key]=value` match a JSON value's text form. */
export const filterParams = {
  search: { type: "string", max: 200, optional: true },
  tag: { type: "string", max: 100, optional: true },
  stage: { type: "string", max: 100, optional: true },
  country: { type: "string", max: 255, optional: true },
  city: { type: "string", max: 255, optional: true },
  createdFrom: { type: "date", convert: true, optional: true },
  createdTo: { type: "date", convert: true, optional: true },
  attributes: { type: "object", optional: true },
  customFields: { type: "object", optional: true },
} as const;

export const schemas = {
  list: {
    $$strict: "remove",
    ...ws,
    ...pageParams,
    ...filterParams,
    sort: { type: "string", max: 50, optional: true },
  },
  create: { $$strict: "remove", ...ws, ...contactFields },
  get: { $$strict: "remove", ...contactPath },
  update: { $$strict: "remove", ...contactPath, ...contactFields },
  consentPut: {
    $$strict: "remove",
    ...contactPath,
    channel: { type: "enum", values: [...CONSENT_CHANNELS, "all"] },
    status: { type: "enum", values: ["opted_in", "opted_out"] },
    source: { type: "string", min: 1, max: 100, optional: true },
  },
  dncList: {
    $$strict: "remove",
    ...ws,
    ...pageParams,
    type: { type: "enum", values: ["email", "phone"], optional: true },
  },
  dncCreate: {
    $$strict: "remove",
    ...ws,
    type: { type: "enum", values: ["email", "phone"] },
    value: { type: "string", min: 1, max: 254 },
    reason: { type: "string", max: 500, optional: true },
  },
  dncDelete: {
    $$strict: "remove",
    ...ws,
    type: { type: "enum", values: ["email", "phone"] },
    value: { type: "string", min: 1, max: 254 },
  },
  workspaceOnly: { $$strict: "remove", ...ws },
  geo: { $$strict: "remove", ...ws, country: { type: "string", max: 255, optional: true } },
  export: { $$strict: "remove", ...ws, ...filterParams, sort: { type: "string", max: 50, optional: true } },
  bulk: {
    $$strict: "remove",
    ...ws,
    action: { type: "enum", values: ["tag", "untag", "delete", "setStage", "setAttribute"] },
    ids: { type: "array", items: { type: "string", max: 64 }, optional: true, max: 1_000_000 },
    filter: { type: "object", optional: true, props: { ...filterParams }, strict: "remove" },
    value: { type: "any", optional: true },
  },
  ingest: {
    $$strict: "remove",
    ...ws,
    contacts: { type: "array", min: 1, max: 1000, items: { type: "any" } },
  },
  merge: {
    $$strict: "remove",
    ...ws,
    primaryId: { type: "string", max: 64 },
    duplicateIds: { type: "array", min: 1, max: 50, items: { type: "string", max: 64 } },
  },
  duplicates: { $$strict: "remove", ...ws, ...pageParams },
  contactDuplicates: { $$strict: "remove", ...contactPath },
  notesList: { $$strict: "remove", ...contactPath, ...pageParams },
  noteCreate: { $$strict: "remove", ...contactPath, body: { type: "string", min: 1, max: 20_000 } },
  timeline: { $$strict: "remove", ...contactPath, ...pageParams },
  stageSet: {
    $$strict: "remove",
    ...contactPath,
    stage: { type: "string", max: 100, nullable: true },
    reason: { type: "string", max: 500, optional: true },
  },
  exportOne: {
    $$strict: "remove",
    ...contactPath,
    format: { type: "enum", values: ["csv", "json"], optional: true },
  },
  stageDefCreate: {
    $$strict: "remove",
    ...ws,
    key: {
      type: "string",
      pattern: /^[a-z][a-z0-9_]{0,49}$/,
      messages: { stringPattern: "must be 1-50 lower-case letters, digits or _ starting with a letter" },
    },
    name: { type: "string", min: 1, max: 100 },
    position: { type: "number", integer: true, min: 0, max: 2_147_483_647, optional: true },
    color: { type: "string", max: 20, optional: true },
  },
  stageDefUpdate: {
    $$strict: "remove",
    ...ws,
    stageId: { type: "string", max: 64 },
    name: { type: "string", min: 1, max: 100, optional: true },
    position: { type: "number", integer: true, min: 0, max: 2_147_483_647, optional: true },
    color: { type: "string", max: 20, optional: true, nullable: true },
  },
  stageDefDelete: { $$strict: "remove", ...ws, stageId: { type: "string", max: 64 } },
  customFieldList: { $$strict: "remove", ...ws, groupId: { type: "string", max: 64, optional: true } },
  customFieldCreate: {
    $$strict: "remove",
    ...ws,
    key: {
      type: "string",
      pattern: /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/,
      messages: { stringPattern: "must be 1-64 letters, digits or _ starting with a letter" },
    },
    label: { type: "string", min: 1, max: 200 },
    type: { type: "enum", values: [...CUSTOM_FIELD_TYPES] },
    options: { type: "array", items: { type: "string", min: 1, max: 200 }, max: 500, optional: true },
    groupId: { type: "string", max: 64, optional: true },
    required: { type: "boolean", optional: true },
    position: { type: "number", integer: true, min: 0, max: 2_147_483_647, optional: true },
  },
  customFieldGroupCreate: {
    $$strict: "remove",
    ...ws,
    name: { type: "string", min: 1, max: 100 },
    position: { type: "number", integer: true, min: 0, max: 2_147_483_647, optional: true },
  },
} as const;
