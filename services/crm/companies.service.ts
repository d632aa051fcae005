import { Type } from "@sinclair/typebox";
import type { ServiceSchema } from "moleculer";
import { defineAction } from "../../lib/define-service";
import { Params } from "../../lib/schema";
import { audit } from "../../lib/audit";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Company } from "../../models";
import * as repo from "./companies.repo";
import { answers, CompanySchema, pageOf, SuccessSchema } from "./crm.openapi";
import { schemas } from "./crm.schemas";
import { actorUserId, assertMember, sentFields } from "./crm.shared";

/** Validated params arrive typed by the schema; handlers read them through this alias. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const openapi = (summary: string, responses: Record<string, unknown>) => ({
  tags: ["Companies"],
  summary,
  responses,
});

/** Companies (accounts) that contacts and deals belong to. contacts.* scopes. */
const CompaniesService: ServiceSchema = {
  name: "companies",
  mixins: [DbMixin(Company)],
  settings: { rest: "/" },

  actions: {
    /** Companies, paginated; search (name, domain), filters and sort. contacts.read. */
    list: {
      rest: "GET /workspaces/:workspaceId/companies",
      auth: "any",
      permission: "contacts.read",
      params: schemas.companies.list,
      openapi: openapi(
        "List companies (search by name or domain; filter by industry, owner, tag, domain, country, created range; sort name, domain, industry, employeeCount, annualRevenue, createdAt, updatedAt)",
        answers(pageOf(CompanySchema)),
      ),
      handler: (ctx: Ctx) => repo.listCompanies(workspaceOf(ctx), ctx.params, pageRequest(ctx.params)),
    },

    /** Create a company; the domain is normalised and unique in the workspace. contacts.write. */
    create: {
      rest: "POST /workspaces/:workspaceId/companies",
      auth: "any",
      permission: "contacts.write",
      params: schemas.companies.create,
      openapi: openapi(
        "Create a company (domain normalised, unique per workspace: 409)",
        answers(CompanySchema, 201),
      ),
      async handler(ctx: Ctx) {
        const workspaceId = workspaceOf(ctx);
        await assertMember(ctx, workspaceId, ctx.params.ownerId, "ownerId");
        const company = await repo.createCompany(
          workspaceId,
          ctx.params as repo.CompanyInput & { name: string },
          actorUserId(ctx),
        );
        await audit(ctx, "company.created", { type: "company", id: company.id }, { name: company.name });
        ctx.meta.$statusCode = 201;
        return company;
      },
    },

    /** Change a company; address and attributes merge key by key, tags are replaced. contacts.write. */
    update: {
      rest: "PATCH /workspaces/:workspaceId/companies/:companyId",
      auth: "any",
      permission: "contacts.write",
      params: schemas.companies.update,
      openapi: openapi(
        "Update a company (address and attributes merge key by key, null removes; tags replace)",
        answers(CompanySchema),
      ),
      async handler(ctx: Ctx) {
        const workspaceId = workspaceOf(ctx);
        await assertMember(ctx, workspaceId, ctx.params.ownerId, "ownerId");
        const company = await repo.updateCompany(workspaceId, ctx.params.companyId, ctx.params);
        await audit(
          ctx,
          "company.updated",
          { type: "company", id: company.id },
          { fields: sentFields(ctx.params, repo.COMPANY_FIELDS) },
        );
        return company;
      },
    },

    /** Delete a company; its contacts, deals and tasks stay, unlinked. contacts.delete. */
    remove: {
      rest: "DELETE /workspaces/:workspaceId/companies/:companyId",
      auth: "any",
      permission: "contacts.delete",
      params: schemas.companies.remove,
      openapi: openapi(
        "Delete a company (its contacts, deals and tasks are kept and unlinked)",
        answers(SuccessSchema),
      ),
      async handler(ctx: Ctx) {
        await repo.deleteCompany(workspaceOf(ctx), ctx.params.companyId);
        await audit(ctx, "company.deleted", { type: "company", id: ctx.params.companyId });
        return { success: true };
      },
    },

    /** Internal: which of `ids` are companies of the caller's workspace (contacts check their companyId). */
    existingIds: defineAction({
      params: Params({ ids: Type.Array(Type.String({ maxLength: 255 }), { maxItems: 1000 }) }),
      result: Type.Array(Type.String()),
      handler: (ctx) => repo.existingCompanyIds(workspaceOf(ctx), ctx.params.ids),
    }),
  },
};

export default CompaniesService;
