import type { OpenedProvider } from "../providers.repo";
import { emailapi1Client, type Emailapi1Config } from "./emailapi1";
import { emailapi2Client, type Emailapi2Config } from "./emailapi2";
import { smsapi1Client, type Smsapi1Config } from "./smsapi1";
import { smsapi2Client, type Smsapi2Config } from "./smsapi2";
import { smtpClient, type SmtpConfig } from "./smtp";
import type { ProviderClient } from "./types";

export { closeHttp } from "./http";
export { logClient } from "./log";
export { BATCH_KEY, holesOf, skeletonOf } from "./batch";
export {
  ProviderError,
  type Accepted,
  type BatchRecipient,
  type BatchSend,
  type Outgoing,
  type ProviderClient,
} from "./types";

/** The client of a stored provider (its config checked at write, its secrets opened). */
export function clientFor(provider: OpenedProvider): ProviderClient {
  const config = provider.config as unknown;
  switch (provider.type) {
    case "smtp":
      return smtpClient(provider.id, config as SmtpConfig);
    case "emailapi1":
      return emailapi1Client(provider.id, config as Emailapi1Config);
    case "emailapi2":
      return emailapi2Client(provider.id, config as Emailapi2Config);
    case "smsapi1":
      return smsapi1Client(provider.id, config as Smsapi1Config);
    case "smsapi2":
      return smsapi2Client(provider.id, config as Smsapi2Config);
    default:
      throw new Error(`Unknown provider type ${provider.type}`);
  }
}
