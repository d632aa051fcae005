import type { ServiceSchema } from "moleculer";
import DbService from "moleculer-db";
import SequelizeDbAdapter from "moleculer-db-adapter-sequelize";
import type { Model, ModelStatic, WhereOptions } from "sequelize";
import { newId } from "../lib/crypto";
import { acquireDatabase, releaseDatabase } from "../lib/database";
import type { AppContext } from "../lib/moleculer-types";
import { workspaceOf, type WorkspaceId } from "../lib/tenancy";

/**
 * moleculer-db's Sequelize adapter, bound to the process's one shared
 * instance. The stock adapter closes the instance it was given when its
 * service stops, which would pull the pool from under every other service;
 * this one only hands its reference back.
 */
class SharedSequelizeAdapter extends SequelizeDbAdapter {
  declare service: { schema: { model: ModelStatic<Model> }; model?: ModelStatic<Model> };
  declare db: unknown;
  declare model: ModelStatic<Model>;

  async connect(): Promise<void> {
    this.db = await acquireDatabase();
    this.model = this.service.schema.model;
    this.service.model = this.model;
  }

  async disconnect(): Promise<void> {
    await releaseDatabase();
  }
}

/** moleculer-db's generated actions would bypass tenancy: none of them is exposed. */
const NO_GENERATED_ACTIONS = {
  find: false,
  count: false,
  list: false,
  create: false,
  insert: false,
  get: false,
  update: false,
  remove: false,
};

/** The adapter calls a scope makes (moleculer-db-adapter-sequelize 0.2). */
interface SequelizeAdapter<M extends Model> {
  find(params: { query: WhereOptions; sort?: string[]; limit?: number; offset?: number }): Promise<M[]>;
  findOne(options: { where: WhereOptions }): Promise<M | null>;
  insert(entity: object): Promise<M>;
  updateMany(where: WhereOptions, update: object): Promise<number>;
  removeMany(where: WhereOptions): Promise<number>;
}

/**
 * A service's own entity, as the caller's workspace sees it: every read and
 * write adds `workspaceId` from `ctx.meta` (never from params), so a row of
 * another workspace is simply not found. The one place the scope is applied.
 */
export class WorkspaceScope<M extends Model> {
  constructor(
    private readonly adapter: SequelizeAdapter<M>,
    readonly workspaceId: WorkspaceId,
  ) {}

  private where(where: WhereOptions): WhereOptions {
    return { ...where, workspaceId: this.workspaceId } as WhereOptions;
  }

  /** `sort` as moleculer-db takes it: field names, `-name` for descending. */
  find(where: WhereOptions, options: { sort?: string[]; limit?: number; offset?: number } = {}) {
    return this.adapter.find({ query: this.where(where), ...options });
  }

  findOne(where: WhereOptions): Promise<M | null> {
    return this.adapter.findOne({ where: this.where(where) });
  }

  /** A new row with a fresh id in the workspace. */
  insert(values: object): Promise<M> {
    return this.adapter.insert({ ...values, id: newId(), workspaceId: this.workspaceId });
  }

  /** How many rows changed. */
  update(where: WhereOptions, changes: object): Promise<number> {
    return this.adapter.updateMany(this.where(where), changes);
  }

  /** How many rows went. */
  remove(where: WhereOptions): Promise<number> {
    return this.adapter.removeMany(this.where(where));
  }
}

/** What `DbMixin(model)` adds to a service's `this`: moleculer-db's adapter over the entity `M`. */
export interface DbState<M extends Model> {
  adapter: SequelizeAdapter<M>;
}

/** The service's entity in the caller's workspace (`DbMixin` services only). */
export function inWorkspace<M extends Model>(service: DbState<M>, ctx: AppContext): WorkspaceScope<M> {
  return new WorkspaceScope(service.adapter, workspaceOf(ctx));
}

/**
 * For a service that reads and writes its own entity `model` through
 * moleculer-db's adapter (`inWorkspace(this, ctx)`); its generated actions are
 * off, so no route or call reaches the entity without the workspace scope.
 */
export function DbMixin(model: ModelStatic<Model>): Partial<ServiceSchema> {
  return {
    mixins: [DbService],
    adapter: new SharedSequelizeAdapter({}),
    model,
    actions: NO_GENERATED_ACTIONS,
  } as Partial<ServiceSchema>;
}
