/** What every provider client shares: the wire types, keep-alive HTTP, batch bodies and the `log` client. */

export { closeHttp } from "./http";
export { logClient } from "./log";
export { BATCH_KEY, holesOf, skeletonOf } from "./batch";
export {
  attachmentsOf,
  ProviderError,
  type Accepted,
  type BatchRecipient,
  type BatchSend,
  type Outgoing,
  type ProviderClient,
} from "./types";
