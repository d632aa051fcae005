import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";

// Every test process: quiet, fast password hashing, data (a generated secret) outside the repo.
process.env.LOG_LEVEL ??= "warn";
process.env.PASSWORD_HASH_COST ??= "10";
Object.assign(process.env, { NODE_ENV: "test" }); // typed read-only by the Next.js types next-auth brings
process.env.DATA_DIR ??= path.join(os.tmpdir(), "cms-test-data");
// Each test file its own Moleculer namespace, which our Redis keys carry: rate-limit counts and cache entries of
// one run, or of another process sharing the Redis, are never another's (suites meeting over NATS name their own).
process.env.NAMESPACE = `test-${randomBytes(4).toString("hex")}`;
