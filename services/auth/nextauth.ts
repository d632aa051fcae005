/**
 * The NextAuth v4 rules that are pure functions: where a sign-in sends the
 * browser, and whether the client wants JSON instead of a redirect.
 */

/** NextAuth's default `redirect` callback: same-origin absolute URLs and paths only. */
export function resolveCallbackUrl(callbackUrl: unknown, origin: string): string {
  if (typeof callbackUrl !== "string" || !callbackUrl) return origin;
  if (callbackUrl.startsWith("/")) return `${origin}${callbackUrl}`;
  try {
    return new URL(callbackUrl).origin === origin ? callbackUrl : origin;
  } catch {
    return origin;
  }
}

/** `json` must be the string "true" (a boolean true still redirects, as next-auth does). */
export const wantsJson = (body: Record<string, unknown>) => body.json === "true";

export const authBase = (origin: string) => `${origin}/api/auth`;

export const credentialsErrorUrl = (origin: string) =>
  `${authBase(origin)}/error?error=CredentialsSignin&provider=credentials`;

export const SIGNIN_ERRORS = new Set([
  "Signin",
  "OAuthSignin",
  "OAuthCallback",
  "OAuthCreateAccount",
  "EmailCreateAccount",
  "Callback",
  "OAuthAccountNotLinked",
  "EmailSignin",
  "CredentialsSignin",
  "SessionRequired",
]);

export const unsupported = (method: string) =>
  `Error: This action with HTTP ${method} is not supported by NextAuth.js`;
