import type { ServiceSchema } from "moleculer";
import DbService from "moleculer-db";
import SequelizeDbAdapter from "moleculer-db-adapter-sequelize";
import type { ModelStatic, Model } from "sequelize";
import { acquireDatabase, releaseDatabase } from "../lib/database";

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

/** Gives a service the shared database; `model` is the entity it owns. */
export function DbMixin(model: ModelStatic<Model>): Partial<ServiceSchema> {
  return {
    mixins: [DbService],
    adapter: new SharedSequelizeAdapter({}),
    model,
    actions: NO_GENERATED_ACTIONS,
  } as Partial<ServiceSchema>;
}
