import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT, sourceFiles } from "../helpers/source-files";

/**
 * Tests wait for the condition they need (test/helpers/wait.ts), never a fixed
 * time. A timer is allowed only where real time passing IS what is tested: a
 * wait that proves something did NOT happen, or a deliberately slow stand-in.
 */

const SELF = "test/unit/fixed-sleeps.test.ts";
const TIMER = /\bsetTimeout\(|\bsleep\(|\bpg_sleep\(|\bwaitForTimeout\(|\bdelay\(|timers\/promises/;

/** Each allowed timer: its file, its line (trimmed) and why no condition can replace it. */
const ALLOWED: Array<{ file: string; line: string; reason: string }> = [
  {
    file: "test/helpers/wait.ts",
    line: "await new Promise((resolve) => setTimeout(resolve, intervalMs));",
    reason: "the polling helper's pause between two checks",
  },
  {
    file: "test/helpers/receiver.ts",
    line: "if (answer.afterMs) setTimeout(reply, answer.afterMs);",
    reason: "a slow endpoint on purpose: tests of concurrency and timeouts ask for it",
  },
  {
    file: "test/integration/integrations/fake-externaltool.ts",
    line: "if (this.upsertDelayMs) setTimeout(send, this.upsertDelayMs);",
    reason: "a slow remote API on purpose: how many requests arrive at once is what the push test counts",
  },
  {
    file: "test/integration/webhooks/outbox.test.ts",
    line: "await new Promise((r) => setTimeout(r, 100));",
    reason: "slow sends keep one relay's rows locked while the other relay claims: the overlap under test",
  },
  {
    file: "test/integration/events/events.test.ts",
    line: "await new Promise((r) => setTimeout(r, 20));",
    reason: "a slow chain step: an unawaited chain would answer before it finished",
  },
  {
    file: "test/integration/content/website-script-browser.test.ts",
    line: "await page.waitForTimeout(1500);",
    reason: "past the item's 1 s delay trigger, to prove it is NOT shown on a page it is not for",
  },
  {
    file: "test/integration/content/website-script-browser.test.ts",
    line: "await page.waitForTimeout(1500);",
    reason: "past the item's 1 s delay trigger, to prove it is NOT shown again to an identified visitor",
  },
  {
    file: "test/integration/cron/background-mixin.test.ts",
    line: 'await sequelize.query("SELECT pg_sleep(0.2)", { type: QueryTypes.SELECT });',
    reason: "a timer pass that lasts, so the stop finds one in flight",
  },
  {
    file: "test/integration/keys/keys.test.ts",
    line: 'await db.query("SELECT pg_sleep(0.05)");',
    reason: "proves lastUsedAt is NOT written again within the minute",
  },
  {
    file: "test/integration/providers/callbacks.test.ts",
    line: "await new Promise((r) => setTimeout(r, 300));",
    reason: "proves a repeated inbound STOP gets NO second reply",
  },
  {
    file: "test/integration/messages/messages.test.ts",
    line: "await new Promise((r) => setTimeout(r, 300));",
    reason: "proves message.sent is NOT delivered twice",
  },
  {
    file: "test/integration/messages/messages.test.ts",
    line: "await new Promise((r) => setTimeout(r, 300));",
    reason: "proves unsubscribe.email is NOT delivered twice",
  },
  {
    file: "test/integration/gateway/keep-alive.test.ts",
    line: "await new Promise((resolve) => setTimeout(resolve, 5_500));",
    reason: "proves an idle connection outlives Node's default 5 s keep-alive",
  },
  {
    file: "test/integration/forms/forms.test.ts",
    line: "await new Promise((r) => setTimeout(r, 500));",
    reason: "proves form.submitted is NOT delivered twice",
  },
  {
    file: "test/integration/campaigns/journey.test.ts",
    line: "await new Promise((resolve) => setTimeout(resolve, 500));",
    reason: "proves each of the journey's facts is NOT delivered twice",
  },
  {
    file: "test/integration/campaigns/campaigns.test.ts",
    line: "await new Promise((r) => setTimeout(r, 200));",
    reason: "proves an unchanged plan does NOT enroll the contact again",
  },
  {
    file: "test/integration/campaigns/campaigns.test.ts",
    line: "await new Promise((resolve) => setTimeout(resolve, 300));",
    reason: "proves a reply failing the step's condition does NOT move the enrollment",
  },
  {
    file: "test/integration/campaigns/campaigns.test.ts",
    line: "await new Promise((resolve) => setTimeout(resolve, 300));",
    reason: "proves nothing enrolls while the campaigns service is down",
  },
  {
    file: "test/integration/campaigns/campaigns.test.ts",
    line: "await new Promise((resolve) => setTimeout(resolve, 300));",
    reason: "proves the missed membership change enrolls the contact only once after the restart",
  },
];

test("no test waits a fixed time, but for the allowed waits that are the thing under test", () => {
  const timers = sourceFiles("test", /\.[jt]s$/)
    .filter((file) => file !== SELF)
    .flatMap((file) =>
      readFileSync(path.join(ROOT, file), "utf8")
        .split("\n")
        .filter((line) => TIMER.test(line))
        .map((line) => `${file}: ${line.trim()}`),
    );
  expect(timers.sort()).toEqual(ALLOWED.map(({ file, line }) => `${file}: ${line}`).sort());
  expect(ALLOWED.every(({ reason }) => reason.length > 0)).toBe(true);
});
