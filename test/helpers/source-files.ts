import fs from "node:fs";
import path from "node:path";

/** The repository's root: the paths below are relative to it. */
export const ROOT = path.resolve(__dirname, "../..");

/** Files under `dir` whose names match `pattern`, as `/`-joined paths from the root (for tests that hold a rule over the code). */
export function sourceFiles(dir: string, pattern = /\.ts$/): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(rel, pattern);
    return pattern.test(entry.name) ? [rel] : [];
  });
}
