import fs from "node:fs";
import type { Client } from "pg";

/** CPU a process has used, read from /proc: the machine is shared, so CPU is what wall time cannot show. */

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** Seconds of CPU (user + system) a process has used, or 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** Pids of the PostgreSQL backends serving `database` now (on this machine, their CPU is readable). */
export async function backendPids(client: Client, database: string): Promise<number[]> {
  const { rows } = await client.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = $1",
    [database],
  );
  return rows.map((r) => r.pid);
}
