import type { ServiceBroker } from "moleculer";
import type { Static } from "@sinclair/typebox";
import type { ApiKeySchema, UserSchema } from "../services/auth/auth.schemas";
import type { WorkspaceSchema } from "../services/workspaces/workspaces.schemas";
import type { Principal } from "./access";
import { systemCall } from "./system-call";
import { asWorkspaceId, type WorkspaceId } from "./tenancy";

/**
 * The operator's first run (`npm run setup`, as listmonk's `--install`):
 * the owner, a first workspace and an API key with every scope, made
 * through the same actions as the API (register, workspaces.create,
 * createKey), so the same rules hold (a weak password is refused as
 * register refuses it). Run again, it finds each of them and makes nothing.
 */
export interface FirstRunInput {
  email: string;
  password: string;
  /** The workspace's name: one of the owner's by that name is the first workspace. */
  workspace: string;
  /** The owner's name; the email's local part when not given. */
  name?: string;
}

type User = Static<typeof UserSchema>;
type Workspace = Static<typeof WorkspaceSchema>;
type ApiKey = Static<typeof ApiKeySchema>;

export interface FirstRunOutcome {
  user: { id: string; email: string; created: boolean };
  workspace: { id: string; name: string; created: boolean };
  /** `key` is the full value, only when the key was created by this run. */
  apiKey: { id: string; name: string; created: boolean; key?: string };
}

/** The name of the key the first run makes; a live key of that name is the one a later run keeps. */
export const FIRST_RUN_KEY_NAME = "setup";

/** A refusal of the first run, said in one line. */
export class FirstRunError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FirstRunError";
  }
}

export async function firstRun(broker: ServiceBroker, input: FirstRunInput): Promise<FirstRunOutcome> {
  const credentials = { email: input.email, password: input.password };
  let user = await systemCall<User | null>(broker, undefined, "auth.checkCredentials", credentials);
  const userCreated = !user;
  if (!user) {
    const name = input.name ?? input.email.split("@")[0];
    user = await systemCall<User>(broker, undefined, "auth.register", { ...credentials, name }).catch(
      (err: { type?: string }) => {
        if (err.type !== "CONFLICT") throw err;
        throw new FirstRunError(
          `an account with the email ${input.email} exists and that is not its password; nothing was changed`,
        );
      },
    );
  }

  const principal: Principal = { kind: "user", userId: user.id, email: user.email, name: user.name };
  const asOwner = { meta: { principal } };
  let workspace = (await broker.call<Workspace[], object>("workspaces.list", {}, asOwner)).find(
    (w) => w.name === input.workspace,
  );
  const workspaceCreated = !workspace;
  workspace ??= await broker.call<Workspace, { name: string }>(
    "workspaces.create",
    { name: input.workspace },
    asOwner,
  );

  const workspaceId = asWorkspaceId(workspace.id);
  let apiKey: ApiKey | undefined = (
    await broker.call<ApiKey[], { workspaceId: WorkspaceId }>("auth.listKeys", { workspaceId }, asOwner)
  ).find((k) => k.name === FIRST_RUN_KEY_NAME);
  const keyCreated = !apiKey;
  apiKey ??= await broker.call<ApiKey, { workspaceId: WorkspaceId; name: string; scopes: string[] }>(
    "auth.createKey",
    { workspaceId, name: FIRST_RUN_KEY_NAME, scopes: ["*"] },
    asOwner,
  );

  return {
    user: { id: user.id, email: user.email, created: userCreated },
    workspace: { id: workspace.id, name: workspace.name, created: workspaceCreated },
    apiKey: {
      id: apiKey.id,
      name: apiKey.name,
      created: keyCreated,
      ...(keyCreated ? { key: apiKey.key } : {}),
    },
  };
}

/** What a run did, for a person (standard error): one line per thing, and how to get another key when it was kept. */
export function describeOutcome(outcome: FirstRunOutcome): string[] {
  const { user, workspace, apiKey } = outcome;
  const state = (created: boolean) => (created ? "created" : "already there");
  const lines = [
    `Owner ${user.email}: ${user.created ? "created" : "already there, password checked"} (user ${user.id})`,
    `Workspace "${workspace.name}": ${state(workspace.created)} (${workspace.id})`,
  ];
  if (apiKey.created) {
    lines.push(
      `API key "${apiKey.name}" with every scope: created (${apiKey.id}). Its value is API_KEY below, ` +
        `shown this once: only its hash is stored.`,
    );
  } else {
    lines.push(
      `API key "${apiKey.name}": already there, kept (${apiKey.id}). Its value cannot be shown again (only its hash ` +
        `is stored); to get another, sign in as ${user.email} and POST /api/workspaces/${workspace.id}/keys ` +
        `(or use /api/docs), or revoke this one and run setup again.`,
    );
  }
  if (!user.created && !workspace.created && !apiKey.created) lines.push("Nothing new was created.");
  return lines;
}

/** The shell line of a run (standard output), for `eval "$(npm run -s setup -- …)"`. */
export function exportLine(outcome: FirstRunOutcome): string {
  const vars: [string, string][] = [
    ["USER_ID", outcome.user.id],
    ["WORKSPACE_ID", outcome.workspace.id],
  ];
  if (outcome.apiKey.key) vars.push(["API_KEY", outcome.apiKey.key]);
  // Ids and keys are letters, digits, `_` and `-`: single quotes need no escaping.
  return `export ${vars.map(([name, value]) => `${name}='${value}'`).join(" ")}`;
}
