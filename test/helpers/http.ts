import { asWorkspaceId } from "../../lib/tenancy";
import { randomHex } from "../../lib/crypto";
import { checkAnswer } from "./answer-check";
import { waitFor } from "./wait";

export interface HttpResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
  setCookies: string[];
}

export interface RequestOptions {
  body?: unknown;
  form?: Record<string, string>;
  raw?: string | Buffer;
  headers?: Record<string, string>;
  bearer?: string;
}

/** A small HTTP client with a cookie jar, for tests through the real gateway. */
export class HttpClient {
  readonly cookies = new Map<string, string>();
  bearer?: string;

  /** Each client looks like its own visitor, so per-IP limits never trip across tests (Redis keeps them between runs). */
  readonly clientIp = `198.18.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`;

  constructor(readonly baseUrl: string) {}

  async request<T = any>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<HttpResponse<T>> {
    const headers: Record<string, string> = { "x-forwarded-for": this.clientIp, ...options.headers };
    let body: string | Buffer | undefined;
    if (options.form) {
      headers["content-type"] = "application/x-www-form-urlencoded";
      body = new URLSearchParams(options.form).toString();
    } else if (options.raw !== undefined) {
      body = options.raw;
    } else if (options.body !== undefined) {
      headers["content-type"] ??= "application/json";
      body = JSON.stringify(options.body);
    }
    const bearer = options.bearer ?? this.bearer;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (this.cookies.size) {
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body, redirect: "manual" });
    const setCookies = res.headers.getSetCookie();
    for (const cookie of setCookies) {
      const [pair, ...attributes] = cookie.split(";");
      const index = pair.indexOf("=");
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      const expired = attributes.some((a) => /max-age=0/i.test(a.trim())) || value === "";
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    let parsed: unknown = text;
    const contentType = res.headers.get("content-type") ?? "";
    if (contentType.includes("json") && text) parsed = JSON.parse(text);
    await checkAnswer(this.baseUrl, method, path, res.status, contentType, parsed);
    return { status: res.status, headers: res.headers, body: parsed as T, text, setCookies };
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>("GET", path, options);
  }
  post<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>("POST", path, { ...options, body });
  }
  put<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>("PUT", path, { ...options, body });
  }
  patch<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>("PATCH", path, { ...options, body });
  }
  delete<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>("DELETE", path, options);
  }
}

export const uniqueEmail = (prefix = "user") => `${prefix}-${randomHex(5)}@example.test`;

export interface SignedInUser {
  id: string;
  email: string;
  password: string;
  client: HttpClient;
}

/**
 * Register a user and sign them in through the NextAuth JSON flow. Each
 * call uses its own X-Forwarded-For so the registration limit never trips.
 */
export async function signUp(baseUrl: string, name = "Test User"): Promise<SignedInUser> {
  const client = new HttpClient(baseUrl);
  const email = uniqueEmail();
  const password = "correct horse battery";
  const ip = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
  const registered = await client.post(
    "/api/auth/register",
    { name, email, password },
    { headers: { "x-forwarded-for": ip } },
  );
  if (registered.status !== 201) throw new Error(`register failed: ${registered.status} ${registered.text}`);
  const signedIn = await client.post("/api/auth/callback/credentials", { email, password, json: "true" });
  if (signedIn.status !== 200) throw new Error(`sign-in failed: ${signedIn.status} ${signedIn.text}`);
  return { id: registered.body.id, email, password, client };
}

/** A signed-in OWNER with a new workspace. */
export async function ownerWithWorkspace(baseUrl: string) {
  const owner = await signUp(baseUrl, "Owner");
  const created = await owner.client.post("/api/workspaces", { name: "Acme" });
  if (created.status !== 201) throw new Error(`workspace create failed: ${created.status} ${created.text}`);
  return {
    owner,
    workspaceId: asWorkspaceId(created.body.id as string),
    ws: `/api/workspaces/${created.body.id}`,
  };
}

/** Poll `GET {ws}/jobs?id=` until the job is no longer queued or running; answers the job. */
export function finishedJob(client: HttpClient, ws: string, jobId: string, ms = 10_000) {
  return waitFor(
    async () => {
      const job = (await client.get(`${ws}/jobs?id=${jobId}`)).body.data?.[0];
      return job && job.status !== "running" && job.status !== "queued" ? job : undefined;
    },
    ms,
    `job ${jobId} to finish`,
  );
}

/** A multipart body as a browser sends it, as `request` options, so the answer is checked like any other. */
export async function multipartBody(form: FormData): Promise<RequestOptions> {
  const request = new Request("http://multipart.test", { method: "POST", body: form });
  return {
    raw: Buffer.from(await request.arrayBuffer()),
    headers: { "content-type": request.headers.get("content-type")! },
  };
}
