import { config } from "./config";

/** Whether a browser origin is this service's own (`PUBLIC_URL`'s) or one of `listed`. */
export function ownOrListedOrigin(origin: string, listed: readonly string[] | null | undefined): boolean {
  return origin === new URL(config().publicUrl).origin || (listed ?? []).includes(origin);
}
