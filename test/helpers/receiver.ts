import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
  /** Requests to the same path unanswered when this one arrived, itself included. */
  concurrent: number;
  /** The sender's port, to find which process sent it (pidOfClient, test/helpers/processes.ts). */
  clientPort: number;
}

/** What the receiver does with the n-th request (0-based): answer a status and body (`afterMs` later), or hang until closed. */
export type Behaviour = (
  req: Received,
  index: number,
) => { status: number; body?: string; headers?: Record<string, string>; afterMs?: number } | "hang";

/** A real HTTP receiver on 127.0.0.1 that records every request exactly as it arrived. */
export async function startReceiver(initial: Behaviour = () => ({ status: 200, body: '{"ok":true}' })) {
  const received: Received[] = [];
  let behaviour = initial;
  const unanswered = new Set<http.ServerResponse>();
  const open = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "";
      open.set(path, (open.get(path) ?? 0) + 1);
      unanswered.add(res);
      res.on("close", () => {
        open.set(path, open.get(path)! - 1);
        unanswered.delete(res);
      });
      const entry = {
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
        concurrent: open.get(path)!,
        clientPort: req.socket.remotePort ?? 0,
      };
      received.push(entry);
      const answer = behaviour(entry, received.length - 1);
      if (answer === "hang") return;
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
        res.end(answer.body ?? "{}");
      };
      if (answer.afterMs) setTimeout(reply, answer.afterMs);
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    received,
    setBehaviour(next: Behaviour) {
      behaviour = next;
    },
    async close() {
      for (const res of unanswered) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
