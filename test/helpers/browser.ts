import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { PROJECT_ROOT } from "../../lib/paths";

/** Debian's chromium (`.ci/run` installs it); CHROMIUM_PATH names another build. */
export const chromiumPath = [
  process.env.CHROMIUM_PATH,
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
].find((candidate): candidate is string => !!candidate && fs.existsSync(candidate));

/** Screenshots of the pages the browser tests load, kept for a person to look at. */
const ARTIFACTS_DIR = path.join(PROJECT_ROOT, "test-artifacts");

/** The whole page as `test-artifacts/<name>.png`. */
export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS_DIR, `${name}.png`), fullPage: true });
}

/** `describe` when a browser is installed; otherwise the suite is skipped and says why, once. */
export function describeWithBrowser(name: string, body: () => void): void {
  if (!chromiumPath) {
    console.log(`${name}: skipped: no Chromium (install Debian's chromium, or set CHROMIUM_PATH)`);
    describe.skip(name, body);
    return;
  }
  describe(name, body);
}

export function launchBrowser(): Promise<Browser> {
  // The flags keep Chromium off the network it would otherwise reach for on its own.
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** A port free right now, for an app whose PUBLIC_URL must name its own port before it starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
