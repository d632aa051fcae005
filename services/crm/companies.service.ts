import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { actingUserId, audit } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { found, notFound } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import * as repo from "./companies.repo";
import { CompanySchema, results, schemas, SuccessSchema } from "./crm.schemas";
import { asDate, assertMember, sentFields } from "./crm.shared";

const remove = requires("contacts.delete");
const read = requires("contacts.read");
const write = requires("contacts.write");

const openapi = (summary: string) => ({ tags: ["Companies"], summary });

/** Companies (accounts) that contacts and deals belong to. contacts.* scopes. */
export default defineService({
  name: "companies",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** Companies, paginated; search (name, domain), filters and sort. contacts.read. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/companies",
      ...read,
      params: schemas.companies.list,
      result: results.companies,
      openapi: openapi(
        "List companies (search by name or domain; filter by industry, owner, tag, domain, country, created range; sort name, domain, industry, employeeCount, annualRevenue, createdAt, updatedAt)",
      ),
      handler(ctx) {
        const filters = {
          ...ctx.params,
          createdFrom: asDate(ctx.params.createdFrom),
          createdTo: asDate(ctx.params.createdTo),
        };
        return repo.listCompanies(workspaceOf(ctx), filters, pageRequest(ctx.params));
      },
    }),

    /** Create a company; the domain is normalised and unique in the workspace. contacts.write. */
    create: defineAction({
      rest: "POST /workspaces/:workspaceId/companies",
      ...write,
      params: schemas.companies.create,
      status: 201,
      result: CompanySchema,
      openapi: openapi("Create a company (domain normalised, unique per workspace: 409)"),
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        await assertMember(ctx, workspaceId, ctx.params.ownerId, "ownerId");
        const company = await repo.createCompany(workspaceId, ctx.params, actingUserId(ctx));
        await audit(ctx, "company.created", { type: "company", id: company.id }, { name: company.name });
        return company;
      },
    }),

    /** Change a company; address and attributes merge key by key, tags are replaced. contacts.write. */
    update: defineAction({
      rest: "PATCH /workspaces/:workspaceId/companies/:companyId",
      ...write,
      params: schemas.companies.update,
      result: CompanySchema,
      openapi: openapi(
        "Update a company (address and attributes merge key by key, null removes; tags replace)",
      ),
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        await assertMember(ctx, workspaceId, ctx.params.ownerId, "ownerId");
        const company = found(
          await repo.updateCompany(workspaceId, ctx.params.companyId, ctx.params),
          "Company",
        );
        await audit(
          ctx,
          "company.updated",
          { type: "company", id: company.id },
          { fields: sentFields(ctx.params, repo.COMPANY_FIELDS) },
        );
        return company;
      },
    }),

    /** Delete a company; its contacts, deals and tasks stay, unlinked. contacts.delete. */
    remove: defineAction({
      rest: "DELETE /workspaces/:workspaceId/companies/:companyId",
      ...remove,
      params: schemas.companies.remove,
      result: SuccessSchema,
      openapi: openapi("Delete a company (its contacts, deals and tasks are kept and unlinked)"),
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const deleted = await repo.deleteCompany(ws, ctx.params.companyId);
        // The contacts area writes its own rows (it may run on another node); unlinking also when the company is
        // already gone lets a retry finish an unlink that failed after the delete.
        await systemCall(ctx, ws, "contacts.unlinkCompany", { companyId: ctx.params.companyId });
        if (!deleted) throw notFound("Company");
        await audit(ctx, "company.deleted", { type: "company", id: ctx.params.companyId });
        return { success: true as const };
      },
    }),

    /** Internal: which of `ids` are companies of the caller's workspace (contacts check their companyId). */
    existingIds: defineAction({
      params: schemas.companies.existingIds,
      result: Type.Array(Type.String()),
      handler: (ctx) => repo.existingCompanyIds(workspaceOf(ctx), ctx.params.ids),
    }),
  },
});
