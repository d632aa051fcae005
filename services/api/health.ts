import { Type, type Static } from "@sinclair/typebox";
import { database } from "../../lib/database";
import { VERSION } from "../../lib/paths";
import { Component, DateTime, StringEnum } from "../../lib/schema";

export const HealthSchema = Component(
  "Health",
  Type.Object({
    status: StringEnum(["ok", "degraded"]),
    timestamp: DateTime(),
    version: Type.String(),
    checks: Type.Object({ database: StringEnum(["ok", "unreachable"]) }),
  }),
);
export type HealthReport = Static<typeof HealthSchema>;

const PROBE_TIMEOUT_MS = 2000;

/** A round trip on the shared pool (Sequelize's `authenticate`), bounded so a dead database answers quickly. */
export async function checkHealth(): Promise<HealthReport> {
  let databaseOk = false;
  try {
    const sequelize = await database();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timeout")), PROBE_TIMEOUT_MS);
    });
    await Promise.race([sequelize.authenticate(), timeout]).finally(() => clearTimeout(timer));
    databaseOk = true;
  } catch {
    databaseOk = false;
  }
  return {
    status: databaseOk ? "ok" : "degraded",
    timestamp: new Date().toISOString(),
    version: VERSION,
    checks: { database: databaseOk ? "ok" : "unreachable" },
  };
}
