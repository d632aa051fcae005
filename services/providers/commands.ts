import { validationError } from "../../lib/errors";
import { COMMAND_CHANNELS, type CommandChannel } from "../../lib/channels";

/**
 * Channel commands (contract 4): a reply that is exactly a keyword (trimmed,
 * any case) opts the sender out of or back into the channel, or asks for
 * help, and is answered with the command's reply. Carriers require STOP and
 * HELP to work on every number; these are the defaults until a workspace
 * replaces them.
 */

export interface ChannelCommand {
  keyword: string;
  action: "opt_out" | "opt_in" | "help";
  channels: CommandChannel[];
  reply: string | null;
}

const ALL = [...COMMAND_CHANNELS];
const STOP_REPLY = "You are unsubscribed and will receive no more messages. Reply START to resubscribe.";
const START_REPLY = "You are subscribed again. Reply STOP to unsubscribe.";
const HELP_REPLY = "Reply STOP to unsubscribe, START to subscribe again.";

export const DEFAULT_COMMANDS: ChannelCommand[] = [
  ...["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"].map((keyword) => ({
    keyword,
    action: "opt_out" as const,
    channels: ALL,
    reply: STOP_REPLY,
  })),
  ...["START", "UNSTOP"].map((keyword) => ({
    keyword,
    action: "opt_in" as const,
    channels: ALL,
    reply: START_REPLY,
  })),
  { keyword: "HELP", action: "help", channels: ALL, reply: HELP_REPLY },
];

/** The command an inbound text is, on its channel; null for any other text. */
export function matchCommand(
  commands: ChannelCommand[],
  channel: CommandChannel,
  text: string,
): ChannelCommand | null {
  const said = text.trim().toUpperCase();
  return (
    commands.find((c) => c.channels.includes(channel) && c.keyword.trim().toUpperCase() === said) ?? null
  );
}

/** A replacement list must not answer one keyword two ways on a channel (400 naming the second). */
export function checkCommands(commands: ChannelCommand[]): ChannelCommand[] {
  const seen = new Set<string>();
  commands.forEach((command, i) => {
    for (const channel of new Set(command.channels)) {
      const key = `${channel}\u0000${command.keyword.trim().toUpperCase()}`;
      if (seen.has(key))
        throw validationError(
          `commands[${i}].keyword ${command.keyword} is already a command on ${channel}`,
          [{ field: `commands[${i}].keyword`, message: `is already a command on ${channel}` }],
        );
      seen.add(key);
    }
  });
  return commands.map((c) => ({ ...c, keyword: c.keyword.trim(), channels: [...new Set(c.channels)] }));
}
