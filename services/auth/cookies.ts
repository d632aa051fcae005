import { serialize, type CookieSerializeOptions as SerializeOptions } from "cookie";
import { config } from "../../lib/config";

/** NextAuth v4 cookie names: `__Secure-`/`__Host-` prefixes when the public URL is https. */
export function cookieNames(secure = config().publicUrl.startsWith("https://")) {
  return {
    secure,
    sessionToken: `${secure ? "__Secure-" : ""}next-auth.session-token`,
    csrfToken: `${secure ? "__Host-" : ""}next-auth.csrf-token`,
    callbackUrl: `${secure ? "__Secure-" : ""}next-auth.callback-url`,
  };
}

/**
 * The session token, joining NextAuth's `.0`, `.1`, ... chunks. Under an
 * https public URL only the `__Secure-` name counts: a browser only accepts
 * that one over https, so a plain name there may have been planted by a
 * sibling host or a plain-http page.
 */
export function readSessionCookie(cookies: Record<string, string> | undefined): string | undefined {
  if (!cookies) return undefined;
  const name = cookieNames().sessionToken;
  if (cookies[name]) return cookies[name];
  const chunks = Object.keys(cookies)
    .filter((key) => key.startsWith(`${name}.`) && /^\d+$/.test(key.slice(name.length + 1)))
    .sort((a, b) => Number(a.slice(name.length + 1)) - Number(b.slice(name.length + 1)));
  return chunks.length ? chunks.map((key) => cookies[key]).join("") : undefined;
}

function baseOptions(secure: boolean): SerializeOptions {
  return { path: "/", httpOnly: true, sameSite: "lax", secure };
}

export function setCookie(name: string, value: string, extra: SerializeOptions = {}): string {
  return serialize(name, value, { ...baseOptions(cookieNames().secure), ...extra });
}

export function clearCookie(name: string): string {
  return serialize(name, "", { ...baseOptions(cookieNames().secure), maxAge: 0 });
}

/** Every session cookie (and chunk) the request carried, cleared. */
export function clearSessionCookies(cookies: Record<string, string> | undefined): string[] {
  const names = Object.keys(cookies ?? {}).filter((key) => key.includes("next-auth.session-token"));
  if (!names.includes(cookieNames().sessionToken)) names.push(cookieNames().sessionToken);
  return names.map(clearCookie);
}
