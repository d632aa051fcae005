import { Type } from "@sinclair/typebox";
import { RetentionCounts, RetentionPolicy, retentionDays, UnknownKey } from "../../lib/retention";
import { Params, WorkspaceIdParam } from "../../lib/schema";

export const schemas = {
  apply: Params(
    {
      workspaceId: WorkspaceIdParam,
      ...retentionDays,
      dryRun: Type.Optional(
        Type.Boolean({
          default: false,
          description: "Answer what a purge would delete now, per kind; nothing is saved or deleted",
        }),
      ),
    },
    { additionalProperties: UnknownKey },
  ),
};

export const results = {
  started: Type.Object({
    jobId: Type.String({ description: "The `retention.purge` job, in `{ws}/jobs`" }),
    policy: RetentionPolicy,
  }),
  dryRun: Type.Object({
    policy: RetentionPolicy,
    wouldDelete: RetentionCounts,
  }),
  runDaily: Type.Object({ started: Type.Integer() }),
};
