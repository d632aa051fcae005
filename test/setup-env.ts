// Every test process: quiet, fast password hashing, a private data dir.
process.env.LOG_LEVEL ??= "warn";
process.env.PASSWORD_HASH_COST ??= "10";
process.env.NODE_ENV = "test";
