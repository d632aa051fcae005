/**
 * The analytics answers by name (contract-messaging section 12): what a
 * dashboard widget or a report names as its `endpoint`, each served at
 * `{ws}/analytics/<name>` (`overview` is `{ws}/analytics` itself).
 */
export const ANALYTICS_ENDPOINTS = [
  "overview",
  "timeseries",
  "campaigns",
  "cohorts",
  "deliverability",
  "domains",
  "funnel",
  "realtime",
  "revenue",
  "sources",
  "attribution",
  "activity",
] as const;

export type AnalyticsEndpoint = (typeof ANALYTICS_ENDPOINTS)[number];
