import { Type, type TSchema } from "@sinclair/typebox";
import { SCOPES } from "../../lib/access";
import {
  Component,
  DateTime,
  Nullable,
  Params,
  StringEnum,
  Trimmed,
  WorkspaceIdParam,
} from "../../lib/schema";

const Email = Type.String({ format: "email", maxLength: 254, transform: ["trim", "toLowerCase"] });
const Password = Type.String({ minLength: 8, maxLength: 256 });
const Scope = StringEnum([...SCOPES, "*"]);

export const UserSchema = Component(
  "User",
  Type.Object({ id: Type.String(), name: Type.String(), email: Type.String(), createdAt: DateTime() }),
);

/** An API key: `key` is the full value in the create answer only, `svc_****abcd` everywhere else. */
export const ApiKeySchema = Component(
  "ApiKey",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    key: Type.String({
      description: "The full key in the create answer only; masked (`svc_****abcd`) in lists",
    }),
    scopes: Type.Array(Type.String()),
    expiresAt: Nullable(DateTime()),
    lastUsedAt: Type.Optional(Nullable(DateTime())),
    createdAt: Type.Optional(DateTime()),
  }),
);

export const SessionSchema = Component(
  "Session",
  Type.Object({
    user: Type.Object({ id: Type.String(), name: Type.String(), email: Type.String() }),
    expires: DateTime(),
  }),
);

const Provider = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.String(),
  signinUrl: Type.String(),
  callbackUrl: Type.String(),
});

export const SuccessSchema = Type.Object({ success: Type.Literal(true) });

/** The answers of NextAuth's own routes, which are not the API's error shape (NextAuth v4 wire protocol). */
const json = (schema: TSchema, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
const redirect = (description: string) => ({
  description,
  headers: { Location: { schema: { type: "string" }, description: "Where the browser goes" } },
});
const text = (description: string, type = "text/plain") => ({
  description,
  content: { [type]: { schema: { type: "string" } } },
});
const UrlAnswer = Type.Object({ url: Type.String({ description: "Where NextAuth would send the browser" }) });
const Empty = Type.Object({}, { maxProperties: 0, description: "Signed out, or the session ended" });
const Unsupported = text("The action does not exist for this method or provider (NextAuth's plain-text 400)");
const Limited = { $ref: "#/components/responses/Error" };

export const responses = {
  csrf: {
    "200": json(Type.Object({ csrfToken: Type.String() }), "The token; the csrf cookie is set when missing"),
  },
  providers: { "200": json(Type.Record(Type.String(), Provider), "The providers by id") },
  callback: {
    "200": json(
      UrlAnswer,
      'Signed in (`json` is "true" or the body is JSON): the session cookie is set; or a form post without a valid csrf token: `{url: .../signin?csrf=true}`',
    ),
    "302": redirect("Without `json`: to the callback URL, the error page or the sign-in page"),
    "401": json(
      UrlAnswer,
      "Wrong email or password: `{url: .../error?error=CredentialsSignin&provider=credentials}`",
    ),
    "400": Unsupported,
    "429": Limited,
  },
  callbackGet: { "302": redirect("To `/api/auth/error?error=Callback`"), "400": Unsupported },
  session: {
    "200": json(Type.Union([SessionSchema, Empty]), "The session (its cookie rolled forward) or `{}`"),
  },
  updateSession: {
    "200": json(Type.Union([SessionSchema, Empty]), "The session, as `GET /api/auth/session`"),
    "400": json(Empty, "No valid csrf token: `{}`, as NextAuth"),
  },
  signout: {
    "200": json(
      UrlAnswer,
      "Signed out (or `{url: .../signout?csrf=true}` for a form post without a valid csrf token)",
    ),
    "302": redirect("Without `json`: to the callback URL"),
  },
  signoutPage: { "200": text("The sign-out page", "text/html") },
  signin: { "302": redirect("To the sign-in page `/auth/signin?callbackUrl=...`") },
  error: { "302": redirect("To the sign-in page with the error") },
  log: { "200": text("Empty") },
  unsupported: { "400": Unsupported },
};

export const schemas = {
  register: Params({ name: Trimmed({ minLength: 1, maxLength: 100 }), email: Email, password: Password }),
  /** NextAuth hands the whole body to the provider; these are the fields the credentials provider reads. */
  callback: Params({
    provider: Type.String({ maxLength: 64 }),
    email: Type.Optional(Type.String({ maxLength: 254 })),
    password: Type.Optional(Type.String({ maxLength: 256 })),
    csrfToken: Type.Optional(Type.String({ maxLength: 200, description: "Required for a form post" })),
    callbackUrl: Type.Optional(Type.String({ maxLength: 2048 })),
    json: Type.Optional(
      Type.Unknown({ description: 'The string "true" for a `{url}` answer instead of a redirect' }),
    ),
  }),
  provider: Params({ provider: Type.String({ maxLength: 64 }) }),
  updateSession: Params({
    csrfToken: Type.Optional(Type.String({ maxLength: 200 })),
    data: Type.Optional(
      Type.Unknown({ description: "Passed to the jwt callback (the default keeps the token)" }),
    ),
  }),
  signout: Params({
    csrfToken: Type.Optional(Type.String({ maxLength: 200, description: "Required for a form post" })),
    callbackUrl: Type.Optional(Type.String({ maxLength: 2048 })),
    json: Type.Optional(Type.Unknown()),
  }),
  signin: Params({
    callbackUrl: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 200 })),
  }),
  signinProvider: Params({
    provider: Type.String({ maxLength: 64 }),
    callbackUrl: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 200 })),
  }),
  error: Params({ error: Type.Optional(Type.String({ maxLength: 200 })) }),
  forgotPassword: Params({ email: Email }),
  resetPassword: Params({ token: Type.String({ minLength: 1, maxLength: 200 }), password: Password }),
  listKeys: Params({ workspaceId: WorkspaceIdParam }),
  createKey: Params({
    workspaceId: WorkspaceIdParam,
    name: Trimmed({ minLength: 1, maxLength: 100 }),
    scopes: Type.Optional(Type.Array(Scope, { maxItems: 64, default: [] })),
    expiresAt: Type.Optional(Nullable(Type.String({ format: "date-time" }))),
  }),
  revokeKey: Params({ workspaceId: WorkspaceIdParam, keyId: Type.String({ minLength: 1, maxLength: 64 }) }),
  verifyApiKey: Params({ keyHash: Type.String({ minLength: 64, maxLength: 64 }) }),
  touchApiKey: Params({ id: Type.String() }),
  checkCredentials: Params({ email: Email, password: Type.String({ maxLength: 256 }) }),
  sessionActive: Params({ userId: Type.String(), sessionId: Type.String(), issuedAt: Type.Number() }),
};
