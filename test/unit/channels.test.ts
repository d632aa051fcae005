import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const ROOT = path.join(__dirname, "../..");
const NAME = `"(?:email|sms|push|chatapp1|chatapp2)"`;
/** Two channel names side by side: an array of channels or a union type of them. */
const CHANNEL_LIST = new RegExp(`${NAME}\\s*(?:,|\\|)\\s*${NAME}`);

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) return sourceFiles(rel);
    return rel.endsWith(".ts") ? [rel] : [];
  });
}

// Migrations keep the CHECK constraints they were written with; everything else takes lib/channels.ts's lists.
test("the channels and their subsets are listed only in lib/channels.ts", () => {
  const listing = ["services", "mixins", "lib"]
    .flatMap(sourceFiles)
    .filter((file) => CHANNEL_LIST.test(readFileSync(path.join(ROOT, file), "utf8")));
  expect(listing).toEqual([path.join("lib", "channels.ts")]);
});
