import { Sequelize } from "sequelize";
import * as foundation from "./0001-foundation";
import * as contacts from "./0002-contacts";
import * as jobs from "./0030-jobs";

export interface Migration {
  name: string;
  up(sequelize: Sequelize): Promise<void>;
}

/** Every migration, in order. Append only: a migration that ran is never edited. */
export const migrations: Migration[] = [
  { name: "0001-foundation", up: foundation.up },
  { name: "0002-contacts", up: contacts.up },
  { name: "0030-jobs", up: jobs.up },
];
