import type { FieldIssue } from "../../lib/errors";
import type { FocusItemView } from "./content.schemas";

/** A focus item's trigger and display rules (contract 10), pure: complete with their defaults and checked. */

export type FocusTrigger = FocusItemView["trigger"];
export type FocusRules = FocusItemView["rules"];

export function completeTrigger(trigger: { on: string; value?: number | null }): FocusTrigger {
  return { on: trigger.on, value: trigger.value ?? null };
}

export function completeRules(rules: Partial<FocusRules> | undefined): FocusRules {
  return {
    urls: rules?.urls ?? [],
    frequency: rules?.frequency ?? null,
    segmentId: rules?.segmentId ?? null,
  };
}

/** What the trigger's `value` must be for its `on`. */
export function triggerIssues(trigger: FocusTrigger): FieldIssue[] {
  const { on, value } = trigger;
  if (on === "scroll" && (value === null || value > 100))
    return [{ field: "trigger.value", message: "a scroll trigger needs the percent of the page (1-100)" }];
  if (on === "delay" && value === null)
    return [{ field: "trigger.value", message: "a delay trigger needs its seconds (1-3600)" }];
  if ((on === "load" || on === "exit_intent") && value !== null)
    return [{ field: "trigger.value", message: `a ${on} trigger takes no value` }];
  return [];
}
