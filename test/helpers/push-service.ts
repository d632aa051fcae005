import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import type { IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { decrypt } from "http_ece";
import { importJWK, jwtVerify, type JWTPayload } from "jose";

/**
 * A local push service (RFC 8030) for web push tests: HTTPS with a
 * self-signed certificate made by `openssl` at start (web-push speaks only
 * https), recording each request and answering each path's chosen status
 * (201 by default). `browser()` makes a browser's subscription whose keys
 * decrypt what it received; `verifyVapid` checks the request's VAPID JWT.
 */

/** An answer that never comes (a push service that hangs). */
export const HANG = 0;

export interface PushRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** When it arrived (ms since the epoch). */
  at: number;
}

export interface FakePushService {
  origin: string;
  /** The PEM certificate file to trust (PUSH_CA_FILE). */
  caFile: string;
  requests: PushRequest[];
  /** Status answered per path (each answered until changed; HANG: none); 201 otherwise. */
  answers: Map<string, number>;
  /** TCP connections opened to it so far. */
  connections(): number;
  stop(): Promise<void>;
}

/** A self-signed certificate for 127.0.0.1, in a fresh directory. */
function selfSigned(): { dir: string; key: string; cert: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "push-service-"));
  const key = path.join(dir, "key.pem");
  const cert = path.join(dir, "cert.pem");
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
      ...["-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"],
      ...["-addext", "subjectAltName=IP:127.0.0.1"],
    ],
    { stdio: "ignore" },
  );
  return { dir, key, cert };
}

export async function startPushService(): Promise<FakePushService> {
  const files = selfSigned();
  const requests: PushRequest[] = [];
  const answers = new Map<string, number>();
  let connections = 0;
  const server = https.createServer(
    { key: fs.readFileSync(files.key), cert: fs.readFileSync(files.cert) },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const url = req.url ?? "/";
        requests.push({ path: url, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
        const status = answers.get(url) ?? 201;
        if (status === HANG) return;
        if (status === 201) res.setHeader("location", `https://127.0.0.1/messages/${requests.length}`);
        res.writeHead(status).end();
      });
    },
  );
  server.on("connection", () => (connections += 1));
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://127.0.0.1:${port}`,
    caFile: files.cert,
    requests,
    answers,
    connections: () => connections,
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(files.dir, { recursive: true, force: true });
    },
  };
}

export interface Browser {
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } };
  /** The notification a request to this browser carries, decrypted with its own keys. */
  read(request: PushRequest): Record<string, unknown>;
}

/** A browser's subscription at the push service (its own ECDH pair and auth secret, RFC 8291). */
export function browser(service: FakePushService, name: string): Browser {
  const ecdh = crypto.createECDH("prime256v1");
  ecdh.generateKeys();
  const auth = crypto.randomBytes(16).toString("base64url");
  return {
    subscription: {
      endpoint: `${service.origin}/push/${name}`,
      keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth },
    },
    read: (request) =>
      JSON.parse(
        decrypt(request.body, { version: "aes128gcm", privateKey: ecdh, authSecret: auth }).toString("utf8"),
      ) as Record<string, unknown>,
  };
}

/**
 * The request's VAPID JWT (RFC 8292 `vapid t=..., k=...`) verified with the
 * key it names, which must be `publicKey`: ES256, `aud` the push service's
 * origin. Answers its claims.
 */
export async function verifyVapid(
  request: PushRequest,
  publicKey: string,
  origin: string,
): Promise<JWTPayload> {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(String(request.headers.authorization));
  if (!match) throw new Error(`Not a VAPID authorization: ${String(request.headers.authorization)}`);
  if (match[2] !== publicKey) throw new Error("The request names another public key");
  const point = Buffer.from(publicKey, "base64url");
  const key = await importJWK(
    {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33, 65).toString("base64url"),
    },
    "ES256",
  );
  const { payload, protectedHeader } = await jwtVerify(match[1], key, {
    audience: origin,
    algorithms: ["ES256"],
  });
  if (protectedHeader.alg !== "ES256") throw new Error("Not ES256");
  return payload;
}
