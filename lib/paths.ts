import fs from "node:fs";
import path from "node:path";

/** The project's root (the folder with package.json), from source or from `dist/`. */
function findRoot(start: string): string {
  let dir = start;
  while (!fs.existsSync(path.join(dir, "package.json"))) {
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}

export const PROJECT_ROOT = findRoot(__dirname);
export const PUBLIC_DIR = path.join(PROJECT_ROOT, "public");
export const VERSION: string = JSON.parse(
  fs.readFileSync(path.join(PROJECT_ROOT, "package.json"), "utf8"),
).version;
