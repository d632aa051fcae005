import { Type, type Static } from "@sinclair/typebox";
import {
  Component,
  DateTime,
  Int32,
  Nullable,
  Params,
  StringEnum,
  Trimmed,
  WorkspaceIdParam,
} from "../../lib/schema";
import { COMMAND_CHANNELS, PROVIDER_CHANNELS } from "../../lib/channels";
import { EMAIL_TYPES, PROVIDER_TYPES, SMS_TYPES, type ProviderType } from "./kinds";

const Id = Type.String({ minLength: 1, maxLength: 64 });

export const ProviderHealthSchema = Component(
  "ProviderHealth",
  Type.Object({
    reachable: Type.Boolean({ description: "Whether the provider answered when asked just now" }),
    webhookRegistered: Type.Boolean({
      description: "Whether the provider's webhook points at this service (after any re-registration)",
    }),
    reRegistered: Type.Boolean({
      description: "The webhook was lost (no URL, or another one) and was registered again by this read",
    }),
    pendingUpdates: Nullable(Type.Integer({ description: "Updates the provider holds, not yet delivered" })),
    lastError: Nullable(Type.String({ description: "The provider's last delivery error, in its words" })),
    lastErrorAt: Nullable(DateTime()),
    checkedAt: DateTime(),
  }),
);
export type ProviderHealth = Static<typeof ProviderHealthSchema>;

export const ProviderSchema = Component(
  "Provider",
  Type.Object({
    id: Type.String(),
    channel: StringEnum(PROVIDER_CHANNELS),
    type: StringEnum(PROVIDER_TYPES),
    name: Type.String(),
    isDefault: Type.Boolean(),
    priority: Type.Integer({ description: "Failover order after the default: lower first" }),
    status: StringEnum(["active", "failing"], {
      description:
        "`failing`: past PROVIDER_FAILOVER_THRESHOLD transient failures; sends go to the next provider until a probe succeeds",
    }),
    consecutiveFailures: Type.Integer(),
    failingSince: Nullable(DateTime()),
    config: Type.Record(Type.String(), Type.Unknown(), {
      description: "The type's settings, secrets masked",
    }),
    health: Type.Optional(ProviderHealthSchema),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type ProviderView = Static<typeof ProviderSchema>;

const Name = Trimmed({ minLength: 1, maxLength: 100 });
const Config = Type.Record(Type.String(), Type.Unknown(), {
  description: "The type's settings (contract 4); a secret sent back masked keeps the stored one",
});
const writable = {
  name: Type.Optional(Name),
  isDefault: Type.Optional(
    Type.Boolean({ description: "Make it the channel's default (clears the others)" }),
  ),
  priority: Type.Optional(Int32({ minimum: 0, maximum: 1000 })),
};

const createParams = (types: readonly ProviderType[]) =>
  Params({ workspaceId: WorkspaceIdParam, type: StringEnum(types), config: Config, ...writable });

export const schemas = {
  list: Params({ workspaceId: WorkspaceIdParam }),
  createEmail: createParams(EMAIL_TYPES),
  createSms: createParams(SMS_TYPES),
  get: Params({ workspaceId: WorkspaceIdParam, providerId: Id }),
  update: Params({
    workspaceId: WorkspaceIdParam,
    providerId: Id,
    config: Type.Optional(Config),
    ...writable,
  }),
  known: Params({ channel: StringEnum(PROVIDER_CHANNELS), providerId: Id }),
  configuredChannels: Params({}),
  reportHealth: Params({
    providerId: Id,
    accepted: Int32({ minimum: 0 }),
    transientFailures: Int32({ minimum: 0 }),
  }),
  domainCheck: Params({
    workspaceId: WorkspaceIdParam,
    providerId: Id,
    domain: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: "^(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]{2,63}$",
        errorMessage: "must be a domain name such as example.com",
        description: "The sending domain; `settings.sender.fromEmail`'s when absent",
      }),
    ),
    dkimSelector: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        pattern: "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$",
        description: "`default` when absent",
      }),
    ),
  }),
};

const RecordCheckSchema = Type.Object({
  status: StringEnum(["pass", "missing", "invalid"]),
  record: Nullable(Type.String({ description: "The TXT record found (several joined by ` | `)" })),
  problem: Nullable(Type.String({ description: "What is missing or malformed" })),
});

const CommandSchema = Component(
  "ChannelCommand",
  Type.Object(
    {
      keyword: Trimmed({ minLength: 1, maxLength: 160 }),
      action: StringEnum(["opt_out", "opt_in", "help"]),
      channels: Type.Array(StringEnum(COMMAND_CHANNELS), { minItems: 1, maxItems: 3 }),
      reply: Nullable(
        Type.String({ maxLength: 1600, description: "Sent back through the same provider; null: none" }),
      ),
    },
    { additionalProperties: false },
  ),
);
const CommandsSchema = Type.Object({ commands: Type.Array(CommandSchema, { maxItems: 100 }) });

export const commandSchemas = {
  get: Params({ workspaceId: WorkspaceIdParam }),
  put: Params({ workspaceId: WorkspaceIdParam, commands: Type.Array(CommandSchema, { maxItems: 100 }) }),
  callback: Params({ providerId: Id }),
};

export const commandResults = {
  commands: CommandsSchema,
  callback: Type.Object({ received: Type.Literal(true) }),
};

export const results = {
  list: Type.Array(ProviderSchema),
  provider: ProviderSchema,
  success: Type.Object({ success: Type.Literal(true) }),
  known: Type.Object({ known: Type.Literal(true) }),
  configuredChannels: Type.Array(StringEnum(PROVIDER_CHANNELS)),
  reportHealth: Type.Object({ status: StringEnum(["active", "failing"]) }),
  domainCheck: Component(
    "DomainCheck",
    Type.Object({
      domain: Type.String(),
      spf: RecordCheckSchema,
      dkim: RecordCheckSchema,
      dmarc: RecordCheckSchema,
    }),
  ),
};
