import os from "node:os";
import path from "node:path";

// Every test process: quiet, fast password hashing, data (a generated secret) outside the repo.
process.env.LOG_LEVEL ??= "warn";
process.env.PASSWORD_HASH_COST ??= "10";
Object.assign(process.env, { NODE_ENV: "test" }); // typed read-only by the Next.js types next-auth brings
process.env.DATA_DIR ??= path.join(os.tmpdir(), "cms-test-data");
