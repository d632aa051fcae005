import type { Config } from "jest";

const ESM_ONLY = [
  "file-type",
  "strtok3",
  "token-types",
  "uint8array-extras",
  "@tokenizer/inflate",
  "@borewit/text-codec",
];

const config: Config = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  transform: {
    "^.+\\.ts$": ["ts-jest", { diagnostics: false }],
    // file-type and its readers ship only ES modules, which Node 20 requires natively but jest's CommonJS runtime does not.
    "^.+\\.js$": ["ts-jest", { diagnostics: false, tsconfig: { allowJs: true } }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join("|")})/)`],
  // file-type exports nothing under "require" (Node 20.19+ takes its "module-sync" entry, which jest does not know).
  moduleNameMapper: { "^file-type$": "<rootDir>/node_modules/file-type/index.js" },
  testSequencer: "<rootDir>/test/slowest-first.mjs",
  globalSetup: "<rootDir>/test/global-setup.ts",
  globalTeardown: "<rootDir>/test/global-teardown.ts",
  setupFiles: ["<rootDir>/test/setup-env.ts"],
  // Hooks too: starting every service takes about 5 s on a quiet machine and 30 s at a load of 15.
  testTimeout: 60_000,
  maxWorkers: 2,
};

export default config;
