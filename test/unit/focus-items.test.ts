import { completeRules, completeTrigger, triggerIssues } from "../../services/content/focus-items";

test("a focus item's trigger value fits its kind; rules complete with their defaults", () => {
  expect(triggerIssues(completeTrigger({ on: "scroll", value: 50 }))).toEqual([]);
  expect(triggerIssues(completeTrigger({ on: "scroll", value: 101 }))[0].field).toBe("trigger.value");
  expect(triggerIssues(completeTrigger({ on: "delay" }))[0].message).toMatch(/seconds/);
  expect(triggerIssues(completeTrigger({ on: "delay", value: 3600 }))).toEqual([]);
  expect(triggerIssues(completeTrigger({ on: "load", value: 2 }))[0].message).toBe(
    "a load trigger takes no value",
  );
  expect(triggerIssues(completeTrigger({ on: "exit_intent" }))).toEqual([]);
  expect(completeRules(undefined)).toEqual({ urls: [], frequency: null, segmentId: null });
  expect(completeRules({ urls: ["/a"] })).toEqual({ urls: ["/a"], frequency: null, segmentId: null });
});
