import type { Static, TSchema } from "@sinclair/typebox";
import type { ActionSchema, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { AppContext } from "./moleculer-types";

type ParamsOf<P> = P extends TSchema ? Static<P> : Record<string, never>;
type ResultOf<R> = R extends TSchema ? Static<R> : unknown;

/** The success statuses an action may declare; the gateway answers with it. */
export type SuccessStatus = 200 | 201 | 202;

/**
 * An action whose params and result are TypeBox schemas: `ctx.params` is
 * typed from `params`, the handler must answer `result`'s type, and both
 * (with `status`) describe the operation in OpenAPI.
 */
export interface TypedAction<
  P extends TSchema | undefined,
  R extends TSchema | undefined,
  A extends Partial<Record<SuccessStatus, TSchema>>,
> extends Omit<ActionSchema, "params" | "handler"> {
  params?: P;
  result?: R;
  status?: SuccessStatus;
  /** Other success answers the handler may choose by setting `ctx.meta.$statusCode` (a 202 job for large work). */
  alsoAnswers?: A;
  handler(
    this: Service,
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
>(action: TypedAction<P, R, A>): ActionSchema {
  const { params, result, alsoAnswers, openapi } = action;
  return {
    ...action,
    params: unshared(params),
    result: unshared(result),
    alsoAnswers: unshared(alsoAnswers),
    openapi: unshared(openapi),
  } as ActionSchema;
}

/** A service schema whose actions were built with `defineAction` (settings typed by `S`). */
export function defineService<S = ServiceSettingSchema>(schema: ServiceSchema<S>): ServiceSchema<S> {
  return schema;
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
