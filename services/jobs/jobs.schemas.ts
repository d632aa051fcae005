import { Type } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import { Component, Nullable, Params, StringEnum, WorkspaceIdParam } from "../../lib/schema";

const JobStatus = StringEnum(["queued", "running", "completed", "failed", "cancelled"]);

/** The contract's job (contract.md, Import). */
export const JobSchema = Component(
  "Job",
  Type.Object({
    id: Type.String(),
    type: Type.String({ description: "e.g. contacts.import, contacts.bulk, segments.recompute" }),
    status: JobStatus,
    progress: Type.Object({ done: Type.Integer(), total: Nullable(Type.Integer()) }),
    result: Type.Unknown({
      description: "What the job produced, by type (an import: {created, updated, failed})",
    }),
    error: Nullable(Type.String()),
    cancellable: Type.Boolean({
      description:
        "Whether `POST {ws}/jobs/{jobId}/cancel` would stop it now (running, and safe to stop halfway)",
    }),
    createdAt: Type.String({ format: "date-time" }),
    startedAt: Nullable(Type.String({ format: "date-time" })),
    finishedAt: Nullable(Type.String({ format: "date-time" })),
  }),
);

export const schemas = {
  list: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    id: Type.Optional(Type.String({ maxLength: 64 })),
    type: Type.Optional(Type.String({ maxLength: 100 })),
    status: Type.Optional(JobStatus),
  }),
  listResult: Paginated(JobSchema),
  cancel: Params({
    workspaceId: WorkspaceIdParam,
    jobId: Type.String({ minLength: 1, maxLength: 64 }),
  }),
  cancelResult: JobSchema,
};
