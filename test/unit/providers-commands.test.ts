import { checkCommands, DEFAULT_COMMANDS, matchCommand } from "../../services/providers/commands";
import { bounceReason, moveFor } from "../../services/messages/provider-events";

describe("channel commands", () => {
  it("match the whole text, trimmed, in any case, on the command's channels only", () => {
    expect(matchCommand(DEFAULT_COMMANDS, "sms", "  stop ")?.action).toBe("opt_out");
    expect(matchCommand(DEFAULT_COMMANDS, "sms", "Unstop")?.action).toBe("opt_in");
    expect(matchCommand(DEFAULT_COMMANDS, "chatapp1", "HELP")?.action).toBe("help");
    expect(matchCommand(DEFAULT_COMMANDS, "sms", "please stop")).toBeNull();
    expect(matchCommand(DEFAULT_COMMANDS, "sms", "STOPP")).toBeNull();
    const own = [
      { keyword: "ALTO", action: "opt_out" as const, channels: ["chatapp2" as const], reply: null },
    ];
    expect(matchCommand(own, "sms", "alto")).toBeNull();
    expect(matchCommand(own, "chatapp2", "alto")?.keyword).toBe("ALTO");
  });

  it("every carrier keyword is there by default", () => {
    const keywords = (action: string) =>
      DEFAULT_COMMANDS.filter((c) => c.action === action).map((c) => c.keyword);
    expect(keywords("opt_out")).toEqual(["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"]);
    expect(keywords("opt_in")).toEqual(["START", "UNSTOP"]);
    expect(keywords("help")).toEqual(["HELP"]);
  });

  it("a replacement answers one keyword one way per channel, and is kept trimmed", () => {
    expect(() =>
      checkCommands([
        { keyword: "Stop", action: "opt_out", channels: ["sms"], reply: null },
        { keyword: "STOP ", action: "help", channels: ["chatapp1", "sms"], reply: null },
      ]),
    ).toThrow(
      expect.objectContaining({
        data: expect.objectContaining({
          details: [expect.objectContaining({ field: "commands[1].keyword" })],
        }),
      }),
    );
    expect(
      checkCommands([
        { keyword: " Stop ", action: "opt_out", channels: ["sms", "sms"], reply: "ok" },
        { keyword: "STOP", action: "help", channels: ["chatapp1"], reply: null },
      ]).map((c) => [c.keyword, c.channels]),
    ).toEqual([
      ["Stop", ["sms"]],
      ["STOP", ["chatapp1"]],
    ]);
  });
});

describe("what a provider's report does to a message's status (contract 3)", () => {
  const report = (kind: "delivered" | "bounced" | "complained" | "failed", hard = true) => ({
    kind,
    messageId: null,
    providerMessageId: "p",
    eventId: null,
    hard,
  });
  it("moves forward only; a late report is history only", () => {
    expect(moveFor("sent", report("delivered"))).toBe("delivered");
    expect(moveFor("opened", report("delivered"))).toBeNull();
    expect(moveFor("sending", report("failed"))).toBe("failed");
    expect(moveFor("delivered", report("failed"))).toBeNull();
    expect(moveFor("delivered", report("bounced"))).toBe("bounced");
    expect(moveFor("opened", report("bounced"))).toBeNull();
    expect(moveFor("clicked", report("complained"))).toBe("complained");
    expect(moveFor("queued", report("complained"))).toBeNull();
    expect(moveFor("sent", { ...report("delivered"), kind: "opened" })).toBeNull();
  });
  it("names hard and soft bounces", () => {
    expect(bounceReason(report("bounced", true))).toBe("hard_bounce");
    expect(bounceReason(report("bounced", false))).toBe("soft_bounce");
    expect(bounceReason(report("delivered"))).toBeNull();
  });
});
