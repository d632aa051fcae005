import { generateKeyPairSync } from "node:crypto";
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";

/**
 * Local fakes of the two push gateways' APIs, recording each request as it
 * arrived: FCM HTTP v1 (its OAuth token endpoint and messages:send, plain
 * HTTP) and APNs (HTTP/2 without TLS, h2c). Each test sets how they answer.
 */

export interface FcmFake {
  baseUrl: string;
  tokenUri: string;
  /** The token requests' form fields. */
  tokenRequests: Array<Record<string, string>>;
  sends: Array<{ path: string; authorization: string | undefined; body: any }>;
  /** The answer to the nth token request (from 1). */
  tokenAnswer: (n: number) => { status: number; body: unknown };
  sendAnswer: (send: { authorization: string | undefined; body: any }) => { status: number; body: unknown };
  close(): Promise<void>;
}

export async function startFcmFake(): Promise<FcmFake> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let answer: { status: number; body: unknown };
      if (req.url === "/token") {
        fake.tokenRequests.push(Object.fromEntries(new URLSearchParams(text)));
        answer = fake.tokenAnswer(fake.tokenRequests.length);
      } else {
        const send = {
          path: req.url ?? "",
          authorization: req.headers.authorization,
          body: JSON.parse(text),
        };
        fake.sends.push(send);
        answer = fake.sendAnswer(send);
      }
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fake: FcmFake = {
    baseUrl,
    tokenUri: `${baseUrl}/token`,
    tokenRequests: [],
    sends: [],
    tokenAnswer: (n) => ({
      status: 200,
      body: { access_token: `token-${n}`, expires_in: 3599, token_type: "Bearer" },
    }),
    sendAnswer: () => ({ status: 200, body: { name: "projects/demo-project/messages/0:1" } }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}

/** An FCM error body as the API answers it (https://firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode). */
export const fcmError = (code: number, status: string, errorCode: string | null) => ({
  error: {
    code,
    message: "Human text that the client must not read",
    status,
    details: errorCode ? [{ "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode }] : [],
  },
});

/** A service account key file for the fake, with a fresh RSA pair; the public key verifies its assertions. */
export function serviceAccountFor(tokenUri: string) {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  const account = {
    type: "service_account",
    project_id: "demo-project",
    private_key_id: "key-id-1",
    private_key: privateKey,
    client_email: "push@demo-project.iam.gserviceaccount.com",
    client_id: "1234567890",
    token_uri: tokenUri,
  };
  return { json: JSON.stringify(account), account, publicKey };
}

export interface ApnsRequest {
  headers: http2.IncomingHttpHeaders;
  body: any;
}

export interface ApnsFake {
  baseUrl: string;
  /** Sessions (connections) opened to the fake. */
  sessions: http2.ServerHttp2Session[];
  requests: ApnsRequest[];
  answer: (request: ApnsRequest) => { status: number; body?: unknown; apnsId?: string };
  close(): Promise<void>;
}

export async function startApnsFake(): Promise<ApnsFake> {
  const server = http2.createServer();
  server.on("session", (session) => fake.sessions.push(session));
  server.on("stream", (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      const request = { headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) };
      fake.requests.push(request);
      const answer = fake.answer(request);
      stream.respond({
        ":status": answer.status,
        "apns-id": answer.apnsId ?? `apns-${fake.requests.length}`,
        ...(answer.body !== undefined && { "content-type": "application/json" }),
      });
      stream.end(answer.body === undefined ? undefined : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const fake: ApnsFake = {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sessions: [],
    requests: [],
    answer: () => ({ status: 200 }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of fake.sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
  return fake;
}

/** An APNs auth key (.p8: a P-256 key in PKCS#8 PEM) and its public key. */
export function apnsKey() {
  return generateKeyPairSync("ec", {
    namedCurve: "prime256v1",
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
}
