import { Sequelize } from "sequelize";
import * as foundation from "./0001-foundation";
import * as contacts from "./0002-contacts";
import * as contactsCrm from "./0003-contacts-crm";
import * as customFields from "./0004-custom-fields";
import * as contactsSearch from "./0005-contacts-search";
import * as crmDeals from "./0006-crm-deals";
import * as crmTasks from "./0007-crm-tasks";
import * as crmViews from "./0008-crm-views";
import * as events from "./0010-events";
import * as webhooks from "./0011-webhooks";
import * as segments from "./0020-segments";
import * as scoring from "./0021-scoring";
import * as scoringDecayConditionsTime from "./0022-scoring-decay-conditions-time";
import * as jobs from "./0030-jobs";
import * as webhookClaimIndex from "./0031-webhook-claim-index";
import * as domainEventOutbox from "./0032-domain-event-outbox";
import * as segmentLogCauses from "./0033-segment-log-causes";
import * as contactsFillfactor from "./0034-contacts-fillfactor";
import * as outboxRetries from "./0035-outbox-retries";
import * as sessionRevocation from "./0036-session-revocation";
import * as webhookClaimByAge from "./0037-webhook-claim-by-age";
import * as templatesMessages from "./0040-templates-messages";
import * as providers from "./0041-providers";
import * as providerCallbacks from "./0042-provider-callbacks";
import * as providerHealth from "./0043-provider-health";
import * as campaigns from "./0050-campaigns";
import * as broadcasts from "./0051-broadcasts";
import * as segmentLogCursor from "./0052-segment-log-cursor";
import * as campaignAb from "./0053-campaign-ab";
import * as enrollmentHistoryIndex from "./0054-enrollment-history-index";
import * as factChangedFields from "./0055-fact-changed-fields";
import * as forms from "./0060-forms";
import * as landingPages from "./0061-landing-pages";
import * as dynamicContent from "./0062-dynamic-content";
import * as focusItems from "./0063-focus-items";
import * as websiteScript from "./0064-website-script";
import * as pushSubscriptions from "./0065-push-subscriptions";
import * as focusItemCounts from "./0066-focus-item-counts";
import * as assets from "./0067-assets";

export interface Migration {
  name: string;
  up(sequelize: Sequelize): Promise<void>;
}

/** Every migration, in order. Append only: a migration that ran is never edited. */
export const migrations: Migration[] = [
  { name: "0001-foundation", up: foundation.up },
  { name: "0002-contacts", up: contacts.up },
  { name: "0003-contacts-crm", up: contactsCrm.up },
  { name: "0004-custom-fields", up: customFields.up },
  { name: "0005-contacts-search", up: contactsSearch.up },
  { name: "0006-crm-deals", up: crmDeals.up },
  { name: "0007-crm-tasks", up: crmTasks.up },
  { name: "0008-crm-views", up: crmViews.up },
  { name: "0010-events", up: events.up },
  { name: "0011-webhooks", up: webhooks.up },
  { name: "0020-segments", up: segments.up },
  { name: "0021-scoring", up: scoring.up },
  { name: "0022-scoring-decay-conditions-time", up: scoringDecayConditionsTime.up },
  { name: "0030-jobs", up: jobs.up },
  { name: "0031-webhook-claim-index", up: webhookClaimIndex.up },
  { name: "0032-domain-event-outbox", up: domainEventOutbox.up },
  { name: "0033-segment-log-causes", up: segmentLogCauses.up },
  { name: "0034-contacts-fillfactor", up: contactsFillfactor.up },
  { name: "0035-outbox-retries", up: outboxRetries.up },
  { name: "0036-session-revocation", up: sessionRevocation.up },
  { name: "0037-webhook-claim-by-age", up: webhookClaimByAge.up },
  { name: "0040-templates-messages", up: templatesMessages.up },
  { name: "0041-providers", up: providers.up },
  { name: "0042-provider-callbacks", up: providerCallbacks.up },
  { name: "0043-provider-health", up: providerHealth.up },
  { name: "0050-campaigns", up: campaigns.up },
  { name: "0051-broadcasts", up: broadcasts.up },
  { name: "0052-segment-log-cursor", up: segmentLogCursor.up },
  { name: "0053-campaign-ab", up: campaignAb.up },
  { name: "0054-enrollment-history-index", up: enrollmentHistoryIndex.up },
  { name: "0055-fact-changed-fields", up: factChangedFields.up },
  { name: "0060-forms", up: forms.up },
  { name: "0061-landing-pages", up: landingPages.up },
  { name: "0062-dynamic-content", up: dynamicContent.up },
  { name: "0063-focus-items", up: focusItems.up },
  { name: "0064-website-script", up: websiteScript.up },
  { name: "0065-push-subscriptions", up: pushSubscriptions.up },
  { name: "0066-focus-item-counts", up: focusItemCounts.up },
  { name: "0067-assets", up: assets.up },
];
