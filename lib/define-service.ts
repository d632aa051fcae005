import type { Static, TSchema } from "@sinclair/typebox";
import type {
  ActionSchema,
  Service,
  ServiceDependency,
  ServiceEvent,
  ServiceHooks,
  ServiceSchema,
  ServiceSettingSchema,
} from "moleculer";
import type { AppContext } from "./moleculer-types";

type ParamsOf<P> = P extends TSchema ? Static<P> : Record<string, never>;
type ResultOf<R> = R extends TSchema ? Static<R> : unknown;

/** The success statuses an action may declare; the gateway answers with it. */
export type SuccessStatus = 200 | 201 | 202;

/** A type's declared members without its index signatures, through which any name would type as `any`. */
type DeclaredMembers<T> = {
  [K in keyof T as string extends K ? never : number extends K ? never : symbol extends K ? never : K]: T[K];
};

/**
 * The settings every service may have: Moleculer's own (`$secureSettings`,
 * ...) and moleculer-web's `rest` prefix for its actions' paths. A service
 * with more declares them (`ServiceThis<Own, ServiceSettings & Mine>`).
 */
export type ServiceSettings = DeclaredMembers<ServiceSettingSchema> & { rest?: string };

/**
 * `this` in a service's handlers, methods and lifecycle hooks: Moleculer's
 * service (its declared members only: Moleculer's own type takes any name)
 * with the state and methods the service and its mixins declare in `Own`,
 * and `this.settings` typed as the settings `S` it declares.
 * A name nobody declared (`this.wak`, `this.settings.crs`) does not compile.
 */
export type ServiceThis<Own = object, S extends object = ServiceSettings> = DeclaredMembers<Service<S>> & Own;

/**
 * An action whose params and result are TypeBox schemas: `ctx.params` is
 * typed from `params`, the handler must answer `result`'s type, and both
 * (with `status`) describe the operation in OpenAPI.
 */
export interface TypedAction<
  P extends TSchema | undefined,
  R extends TSchema | undefined,
  A extends Partial<Record<SuccessStatus, TSchema>>,
  This = ServiceThis,
> extends Omit<ActionSchema, "params" | "handler"> {
  params?: P;
  result?: R;
  status?: SuccessStatus;
  /** Other success answers the handler may choose by setting `ctx.meta.$statusCode` (a 202 job for large work). */
  alsoAnswers?: A;
  /** Declare `this: <the service's type>` to use the service's own state or methods. */
  handler(
    this: This,
    ctx: AppContext<ParamsOf<P>>,
  ): ResultOf<R> | ResultOf<A[keyof A]> | Promise<ResultOf<R> | ResultOf<A[keyof A]>>;
}

/**
 * A copy of a declaration that shares no object with another one. Moleculer
 * serialises a node's services for the other nodes dropping every object it
 * has already met (its circular-reference guard), so a shape used twice (an
 * id schema in many params, a component in many results, a tags list) would
 * vanish from the description a gateway on another node builds.
 */
const unshared = <T>(value: T): T => (value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T));

export function defineAction<
  P extends TSchema | undefined = undefined,
  R extends TSchema | undefined = undefined,
  A extends Partial<Record<SuccessStatus, TSchema>> = Record<never, TSchema>,
  This = ServiceThis,
>(action: TypedAction<P, R, A, This>): ActionSchema {
  const { params, result, alsoAnswers, openapi } = action;
  return {
    ...action,
    params: unshared(params),
    result: unshared(result),
    alsoAnswers: unshared(alsoAnswers),
    openapi: unshared(openapi),
  } as ActionSchema;
}

/** What `defineService` and `defineMixin` take as `this`: a `ServiceThis` of any settings (`Service<S>` is invariant in `S`, so the bound names only `settings`). */
type TypedThis = Pick<ServiceThis<object, object>, "settings">;

/** An event handler; declared as a method so a handler may name its own params' type (`AppContext<{ id: string }>`). */
type EventHandler<This> = { handler(this: This, ctx: AppContext): void | Promise<void> }["handler"];

/** A durable channel's subscription (@moleculer/channels), its handler run with the service's `this`. */
interface ChannelSubscription<This> {
  group?: string;
  context?: boolean;
  maxInFlight?: number;
  maxRetries?: number;
  handler(this: This, payload: never): unknown;
}

/**
 * A service schema whose `this` is `This` (a `ServiceThis`) in every
 * handler, method, event and lifecycle hook. Actions built with
 * `defineAction` declare their own `this` when they need the service's.
 */
export interface ServiceDefinition<This extends TypedThis> {
  name: string;
  version?: string | number;
  settings?: This["settings"];
  dependencies?: string | ServiceDependency | (string | ServiceDependency)[];
  metadata?: Record<string, unknown>;
  mixins?: Partial<ServiceSchema>[];
  /** `false` turns off an action a mixin brings (moleculer-web's alias listing). */
  actions?: Record<string, ActionSchema | ((this: This, ctx: AppContext) => unknown) | false>;
  methods?: { [K in keyof This]?: This[K] };
  events?: Record<
    string,
    EventHandler<This> | (Omit<ServiceEvent, "handler"> & { handler: EventHandler<This> })
  >;
  hooks?: ServiceHooks;
  channels?: Record<string, ChannelSubscription<This>>;
  created?: (this: This) => void;
  started?: (this: This) => void | Promise<void>;
  stopped?: (this: This) => void | Promise<void>;
}

/**
 * A service whose `this` is typed: `defineService<ServiceThis<State & Methods>>({...})`
 * (the state its hooks set, the methods it and its mixins declare); a
 * service with neither needs no type argument.
 */
export function defineService<This extends TypedThis = ServiceThis>(
  schema: ServiceDefinition<This> & ThisType<This>,
): ServiceSchema {
  return schema as ServiceSchema;
}

/** One part of a service (a `*.actions.ts` mixin): its `this` typed as the service's, which exports it. */
export function defineMixin<This extends TypedThis = ServiceThis>(
  schema: Partial<ServiceDefinition<This>> & ThisType<This>,
): Partial<ServiceSchema> {
  return schema as Partial<ServiceSchema>;
}

/** Answers with the action's declared `status` unless the handler chose another (a 202 for a large batch). */
export const DeclaredStatusMiddleware = {
  localAction(handler: (ctx: AppContext) => Promise<unknown>, action: ActionSchema) {
    const status = action.status as SuccessStatus | undefined;
    if (!status || status === 200) return handler;
    return async function withDeclaredStatus(ctx: AppContext) {
      const result = await handler(ctx);
      ctx.meta.$statusCode ??= status;
      return result;
    };
  },
};
