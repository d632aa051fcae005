import { newId } from "../../lib/crypto";
import { Binds, likeEscape, uniqueViolation } from "../../lib/database";
import { conflict, fieldError } from "../../lib/errors";
import { selectPage, sortOrder, type PageRequest } from "../../lib/pagination";
import { Company } from "../../models";
import { mergeObject, normaliseDomain } from "./crm.rules";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on companies; each takes the workspace id first. */

/** Which of these ids are companies of the workspace. */
export async function existingCompanyIds(workspaceId: WorkspaceId, ids: string[]): Promise<string[]> {
  const rows = await Company.findAll({ where: { workspaceId, id: ids }, attributes: ["id"] });
  return rows.map((row) => row.id);
}

export interface CompanyInput {
  name?: string;
  domain?: string | null;
  website?: string | null;
  industry?: string | null;
  employeeCount?: number | null;
  annualRevenue?: number | null;
  currency?: string | null;
  phone?: string | null;
  description?: string | null;
  address?: Record<string, string | null>;
  ownerId?: string | null;
  tags?: string[];
  attributes?: Record<string, unknown>;
}

export const COMPANY_FIELDS = [
  "name",
  "domain",
  "website",
  "industry",
  "employeeCount",
  "annualRevenue",
  "currency",
  "phone",
  "description",
  "address",
  "ownerId",
  "tags",
  "attributes",
] as const;

/** A company's fields as a view needs them: a model instance or a listed row. */
type CompanyFields = Pick<
  Company,
  (typeof COMPANY_FIELDS)[number] | "id" | "createdBy" | "createdAt" | "updatedAt"
>;

const COMPANY_COLUMNS = `id, name, domain, website, industry, employee_count AS "employeeCount",
  annual_revenue AS "annualRevenue", currency, phone, description, address, owner_id AS "ownerId", tags,
  attributes, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt"`;

export const companyView = (c: CompanyFields) => ({
  id: c.id,
  name: c.name,
  domain: c.domain,
  website: c.website,
  industry: c.industry,
  employeeCount: c.employeeCount,
  annualRevenue: c.annualRevenue === null ? null : Number(c.annualRevenue),
  currency: c.currency,
  phone: c.phone,
  description: c.description,
  address: c.address,
  ownerId: c.ownerId,
  tags: c.tags,
  attributes: c.attributes,
  createdBy: c.createdBy,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});
export type CompanyView = ReturnType<typeof companyView>;

const SORTS = {
  name: "name",
  domain: "domain",
  industry: "industry",
  employeeCount: "employee_count",
  annualRevenue: "annual_revenue",
  createdAt: "created_at",
  updatedAt: "updated_at",
};

function domainOf(value: string | null | undefined): string | null | undefined {
  if (value === undefined || value === null || value === "") return value === "" ? null : value;
  const domain = normaliseDomain(value);
  if (!domain) throw fieldError("domain", "must be a domain name such as acme.com");
  return domain;
}

const withoutEmpty = (address: Record<string, string | null | undefined>) =>
  Object.fromEntries(
    Object.entries(address).filter(([, v]) => v !== null && v !== undefined && v !== ""),
  ) as Record<string, string>;

async function saving<T>(work: () => Promise<T>, domain: string | null | undefined): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`A company with the domain '${domain}' exists`);
    throw err;
  }
}

export interface CompanyFilters {
  search?: string;
  industry?: string;
  ownerId?: string;
  tag?: string;
  domain?: string;
  country?: string;
  createdFrom?: Date;
  createdTo?: Date;
  sort?: string;
}

export async function listCompanies(workspaceId: WorkspaceId, f: CompanyFilters, page: PageRequest) {
  const b = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  if (f.search) {
    // The expression matches companies_search_idx, so the trigram index serves it.
    where.push(
      `lower(name || ' ' || coalesce(domain, '')) LIKE ${b.p(`%${likeEscape(f.search.toLowerCase())}%`)}`,
    );
  }
  if (f.industry) where.push(`industry ILIKE ${b.p(likeEscape(f.industry))}`);
  if (f.ownerId) where.push(`owner_id = ${b.p(f.ownerId)}`);
  if (f.tag) where.push(`tags @> ARRAY[${b.p(f.tag)}]::text[]`);
  if (f.domain) where.push(`domain = ${b.p(normaliseDomain(f.domain) ?? f.domain.toLowerCase())}`);
  if (f.country) where.push(`address->>'country' = ${b.p(f.country.toUpperCase())}`);
  if (f.createdFrom) where.push(`created_at >= ${b.p(f.createdFrom)}`);
  if (f.createdTo) where.push(`created_at <= ${b.p(f.createdTo)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    {
      select: `SELECT ${COMPANY_COLUMNS} FROM companies WHERE ${clause}`,
      orderBy: sortOrder(f.sort, SORTS, "-createdAt")
        .map(([column, direction]) => `${column} ${direction}`)
        .join(", "),
      countFrom: `FROM companies WHERE ${clause}`,
    },
    b.values,
    page,
    companyView,
  );
}

export async function createCompany(
  workspaceId: WorkspaceId,
  input: CompanyInput & { name: string },
  createdBy: string | null,
) {
  const domain = domainOf(input.domain);
  return saving(async () => {
    const company = await Company.create({
      ...input,
      id: newId(),
      workspaceId,
      domain: domain ?? null,
      address: withoutEmpty(input.address ?? {}),
      tags: [...new Set(input.tags ?? [])],
      attributes: input.attributes ?? {},
      createdBy,
    });
    return companyView(company);
  }, domain);
}

const findCompany = (workspaceId: WorkspaceId, companyId: string): Promise<Company | null> =>
  Company.findOne({ where: { id: companyId, workspaceId } });

/** Merge `address` and `attributes` key by key (null removes a key); replace `tags`. Null: no such company. */
export async function updateCompany(workspaceId: WorkspaceId, companyId: string, input: CompanyInput) {
  const company = await findCompany(workspaceId, companyId);
  if (!company) return null;
  const domain = domainOf(input.domain);
  const { address, attributes, tags, ...plain } = input;
  for (const [key, value] of Object.entries(plain)) if (value !== undefined) company.set(key, value);
  if (domain !== undefined) company.domain = domain;
  if (address) company.address = withoutEmpty({ ...company.address, ...address });
  if (attributes) company.attributes = mergeObject(company.attributes, attributes);
  if (tags) company.tags = [...new Set(tags)];
  company.changed("updatedAt", true);
  return saving(async () => companyView(await company.save()), domain);
}

/** Deals and tasks keep their rows (the reference is cleared by the foreign key); contacts are unlinked by their area. */
export async function deleteCompany(workspaceId: WorkspaceId, companyId: string): Promise<boolean> {
  return (await Company.destroy({ where: { id: companyId, workspaceId } })) > 0;
}
