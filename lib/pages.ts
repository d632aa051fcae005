import fs from "node:fs";
import path from "node:path";
import type { AppContext } from "./moleculer-types";
import { PUBLIC_DIR } from "./paths";

/** Answer with one of the HTML pages under public/. */
export function servePage(ctx: AppContext, file: string): fs.ReadStream {
  ctx.meta.$responseType = "text/html; charset=utf-8";
  return fs.createReadStream(path.join(PUBLIC_DIR, file));
}
