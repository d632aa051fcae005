import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { Int32, Nullable, Params } from "../../lib/schema";

const Id = Type.String({ minLength: 1, maxLength: 64 });
const ListId = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: 100,
    description: "The remote list; default settings.externaltool.listId",
  }),
);

/** Who may use the integrations (contract-messaging 1: `contacts.write`). */
export const ACCESS = requires("contacts.write");

export const PREVIEW_LIMIT = { default: 10, max: 50 } as const;

const Sample = Type.Object({
  email: Type.String(),
  firstName: Nullable(Type.String()),
  lastName: Nullable(Type.String()),
  phone: Nullable(Type.String()),
  status: Type.String({ description: "The remote status: subscribed, unsubscribed, cleaned, pending, ..." }),
  tags: Type.Array(Type.String()),
});

const JobAccepted = Type.Object({ jobId: Type.String({ description: "Follow it at `GET {ws}/jobs?id=`" }) });

export const schemas = {
  preview: Params({
    workspaceId: Id,
    listId: ListId,
    limit: Type.Optional(
      Int32({
        minimum: 1,
        maximum: PREVIEW_LIMIT.max,
        description: `Members shown (default ${PREVIEW_LIMIT.default})`,
      }),
    ),
  }),
  import: Params({
    workspaceId: Id,
    listId: ListId,
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        maxItems: 50,
        description: "Added to every imported contact, besides the member's remote tags",
      }),
    ),
  }),
  contacts: Params({
    workspaceId: Id,
    contactIds: Type.Optional(Type.Array(Id, { minItems: 1, maxItems: 1000 })),
    segmentId: Type.Optional(Id),
    listId: ListId,
  }),
};

export const results = {
  preview: Type.Object({
    total: Type.Integer({ description: "Members in the remote list" }),
    sample: Type.Array(Sample),
    mapping: Type.Array(Type.Object({ remote: Type.String(), local: Type.String() })),
  }),
  job: JobAccepted,
  pushed: Type.Object({
    pushed: Type.Integer(),
    failed: Type.Array(Type.Object({ contactId: Type.String(), error: Type.String() })),
  }),
};
