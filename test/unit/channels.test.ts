import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT, sourceFiles } from "../helpers/source-files";

const NAME = `"(?:email|sms|push|chatapp1|chatapp2)"`;
/** Two channel names side by side: an array of channels or a union type of them. */
const CHANNEL_LIST = new RegExp(`${NAME}\\s*(?:,|\\|)\\s*${NAME}`);

// Migrations keep the CHECK constraints they were written with; everything else takes lib/channels.ts's lists.
test("the channels and their subsets are listed only in lib/channels.ts", () => {
  const listing = ["services", "mixins", "lib"]
    .flatMap((dir) => sourceFiles(dir))
    .filter((file) => CHANNEL_LIST.test(readFileSync(path.join(ROOT, file), "utf8")));
  expect(listing).toEqual([path.join("lib", "channels.ts")]);
});
