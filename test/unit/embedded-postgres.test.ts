import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { EmbeddedDatabaseError, reachableByOthers } from "../../lib/embedded-postgres";

test("a path is reachable by others only when every directory above it is searchable by others", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cms-reach-")); // 0700
  try {
    const inside = path.join(dir, "clone", ".data", "pg"); // need not exist yet
    expect(reachableByOthers(inside)).toBe(false);
    fs.chmodSync(dir, 0o755);
    expect(reachableByOthers(inside)).toBe(reachableByOthers(os.tmpdir()));
    fs.mkdirSync(path.join(dir, "clone"), { mode: 0o700 });
    expect(reachableByOthers(inside)).toBe(false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("an embedded database failure is one line, without a stack trace", () => {
  const err = new EmbeddedDatabaseError("why, and what to do");
  expect(err.stack).toBe("EmbeddedDatabaseError: why, and what to do");
});
