import type { Static, TObject } from "@sinclair/typebox";
import type { ContactFilter } from "./contact-search.repo";
import { contactFields, type filterParams } from "./contacts.schemas";
import type { ContactInput } from "./fields";

type FilterParams = Static<TObject<typeof filterParams>>;

/** Validated params as the contact area reads them. */

/** The list, export and bulk filters: the time bounds as dates. */
export function filterOf(params: FilterParams): ContactFilter {
  const { createdFrom, createdTo, ...rest } = params;
  return {
    ...rest,
    createdFrom: createdFrom ? new Date(createdFrom) : undefined,
    createdTo: createdTo ? new Date(createdTo) : undefined,
  };
}

/** The writable contact fields of validated params (path params left out). */
export function inputOf(params: Record<string, unknown>): ContactInput {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(contactFields)) if (params[key] !== undefined) input[key] = params[key];
  return input as ContactInput;
}
