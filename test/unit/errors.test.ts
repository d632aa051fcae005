import { Errors } from "moleculer";
import ApiGateway from "moleculer-web";
import {
  conflict,
  fieldError,
  forbidden,
  invalidSignature,
  notFound,
  notRetryable,
  queryTooExpensive,
  rateLimited,
  toHttpError,
  unauthorized,
  upstreamError,
  validationError,
} from "../../lib/errors";

const noStack = (answer: ReturnType<typeof toHttpError>) => {
  expect(JSON.stringify(answer.body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
};

describe("toHttpError: the catalogue", () => {
  test.each([
    [
      "validationError",
      validationError("name is required", [{ field: "name", message: "is required" }]),
      400,
      "VALIDATION_ERROR",
    ],
    ["fieldError", fieldError("email", "must be an email"), 400, "VALIDATION_ERROR"],
    ["notRetryable", notRetryable("only OUTBOUND deliveries"), 400, "NOT_RETRYABLE"],
    ["queryTooExpensive", queryTooExpensive("too deep"), 400, "QUERY_TOO_EXPENSIVE"],
    ["unauthorized", unauthorized(), 401, "UNAUTHORIZED"],
    ["invalidSignature", invalidSignature(), 401, "INVALID_SIGNATURE"],
    ["forbidden", forbidden(), 403, "FORBIDDEN"],
    ["notFound", notFound("Contact"), 404, "NOT_FOUND"],
    ["conflict", conflict("taken"), 409, "CONFLICT"],
    ["rateLimited", rateLimited(42), 429, "RATE_LIMITED"],
    ["upstreamError", upstreamError("the bot API is unreachable"), 502, "UPSTREAM_ERROR"],
  ])("%s", (_name, err, status, code) => {
    const answer = toHttpError(err, false);
    expect(answer.status).toBe(status);
    expect(answer.body.code).toBe(code);
    expect(answer.body.error).toBe(err.message);
    noStack(answer);
  });

  test("details are kept and only where given", () => {
    expect(toHttpError(fieldError("email", "must be an email"), false).body).toEqual({
      error: "email must be an email",
      code: "VALIDATION_ERROR",
      details: [{ field: "email", message: "must be an email" }],
    });
    expect(toHttpError(notFound("Contact"), false).body).toEqual({
      error: "Contact not found",
      code: "NOT_FOUND",
    });
  });

  test("rateLimited carries Retry-After in seconds", () => {
    expect(toHttpError(rateLimited(42), false).headers).toEqual({ "Retry-After": "42" });
    expect(toHttpError(notFound(), false).headers).toEqual({});
  });
});

describe("toHttpError: moleculer and moleculer-web errors", () => {
  test("the gateway's route-not-found is ROUTE_NOT_FOUND", () => {
    expect(toHttpError(new ApiGateway.Errors.NotFoundError("NOT_FOUND", null), true)).toEqual({
      status: 404,
      headers: {},
      body: { error: "Route not found", code: "ROUTE_NOT_FOUND" },
    });
  });

  test("a service an action called that no node runs (an outage) is 503, not a missing route", () => {
    expect(toHttpError(new Errors.ServiceNotFoundError({ action: "x.y" }), false)).toMatchObject({
      status: 503,
      body: { code: "SERVICE_UNAVAILABLE" },
    });
  });

  test("the parameter validator's errors are 400 with a detail per field", () => {
    const err = new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", [
      { type: "required", field: "email", message: "The 'email' field is required.", actual: undefined },
      {
        type: "stringMin",
        field: "password",
        message: "The 'password' field length must be at least 8 characters long.",
      },
    ]);
    expect(toHttpError(err, false)).toEqual({
      status: 400,
      headers: {},
      body: {
        error: "email: The 'email' field is required.",
        code: "VALIDATION_ERROR",
        details: [
          { field: "email", message: "The 'email' field is required." },
          { field: "password", message: "The 'password' field length must be at least 8 characters long." },
        ],
      },
    });
  });

  test("body-parser failures: too large 413, bad JSON 400, bad encoding 400", () => {
    const tooLarge = Object.assign(new Error("request entity too large"), {
      status: 413,
      type: "entity.too.large",
    });
    expect(toHttpError(tooLarge, false)).toEqual({
      status: 413,
      headers: {},
      body: { error: "Request body is too large", code: "PAYLOAD_TOO_LARGE" },
    });
    // moleculer-web's own PayloadTooLarge (untyped in its .d.ts)
    const PayloadTooLarge = (ApiGateway.Errors as any).PayloadTooLarge;
    expect(toHttpError(new PayloadTooLarge({}), false)).toMatchObject({
      status: 413,
      body: { code: "PAYLOAD_TOO_LARGE" },
    });
    const badJson = Object.assign(new SyntaxError("Unexpected token } in JSON at position 1"), {
      status: 400,
      type: "entity.parse.failed",
    });
    expect(toHttpError(badJson, false)).toEqual({
      status: 400,
      headers: {},
      body: { error: "Request body is not valid JSON", code: "VALIDATION_ERROR" },
    });
    expect(toHttpError(new ApiGateway.Errors.InvalidRequestBodyError("x", "y"), false).body.code).toBe(
      "VALIDATION_ERROR",
    );
    const encoding = Object.assign(new Error("unsupported content encoding"), {
      status: 415,
      type: "encoding.unsupported",
    });
    expect(toHttpError(encoding, false)).toMatchObject({ status: 400, body: { code: "VALIDATION_ERROR" } });
  });

  test("401 and 403 of other origins use the contract's codes", () => {
    expect(toHttpError(new ApiGateway.Errors.UnAuthorizedError("NO_TOKEN", null), false)).toEqual({
      status: 401,
      headers: {},
      body: { error: "Authentication required", code: "UNAUTHORIZED" },
    });
    expect(toHttpError(new ApiGateway.Errors.ForbiddenError("NO_RIGHTS", null), false)).toEqual({
      status: 403,
      headers: {},
      body: { error: "Forbidden", code: "FORBIDDEN" },
    });
  });

  test("other client errors keep their status under a contract code", () => {
    expect(toHttpError(new Errors.MoleculerClientError("Bad thing", 400, "SOMETHING"), false)).toEqual({
      status: 400,
      headers: {},
      body: { error: "Bad thing", code: "VALIDATION_ERROR" },
    });
    expect(toHttpError(new Errors.MoleculerClientError("Gone", 404, "GONE"), false).body).toEqual({
      error: "Gone",
      code: "NOT_FOUND",
    });
    expect(toHttpError(new Errors.MoleculerClientError("Dup", 409, "DUP"), false).body.code).toBe("CONFLICT");
    const limited = toHttpError(new ApiGateway.Errors.RateLimitExceeded("RATE_LIMIT_EXCEEDED", null), false);
    expect(limited).toMatchObject({ status: 429, body: { code: "RATE_LIMITED" } });
    expect(limited.headers["Retry-After"]).toMatch(/^\d+$/);
  });

  test("unavailable and timed-out calls are 503", () => {
    expect(
      toHttpError(new Errors.ServiceNotAvailableError({ action: "a.b", nodeID: "n" }), false),
    ).toMatchObject({
      status: 503,
      body: { code: "SERVICE_UNAVAILABLE" },
    });
    expect(toHttpError(new Errors.RequestTimeoutError({ action: "a.b", nodeID: "n" }), false).status).toBe(
      503,
    );
    expect(toHttpError(new ApiGateway.Errors.ServiceUnavailableError("X", null), false).status).toBe(503);
  });

  test("a remote API that failed is a 502 UPSTREAM_ERROR with its message, also after a NATS hop", () => {
    const err = upstreamError("The external tool could not be reached: connect ECONNREFUSED 127.0.0.1:9");
    const expected = {
      status: 502,
      body: {
        error: "The external tool could not be reached: connect ECONNREFUSED 127.0.0.1:9",
        code: "UPSTREAM_ERROR",
      },
    };
    expect(toHttpError(err, false)).toMatchObject(expected);
    // Over the wire only the plain fields remain.
    const { name, message, code, type } = err;
    expect(toHttpError({ name, message, code, type }, false)).toMatchObject(expected);
  });
});

describe("toHttpError: anything unexpected is a bare 500", () => {
  test.each([
    ["a plain Error", new Error("connection to 10.0.0.3 refused at /srv/app/db.ts:12")],
    ["a TypeError", new TypeError("Cannot read properties of undefined (reading 'id')")],
    ["a server error", new Errors.MoleculerServerError("boom", 500, "BOOM", { secret: "x" })],
    ["a system error with a string code", Object.assign(new Error("EACCES"), { code: "EACCES" })],
    ["a string", "oops"],
    ["null", null],
    ["undefined", undefined],
  ])("%s", (_name, err) => {
    const answer = toHttpError(err, false);
    expect(answer).toEqual({
      status: 500,
      headers: {},
      body: { error: "Internal server error", code: "INTERNAL" },
    });
  });
});

describe("toHttpError: a dependency out of reach is a 503 with Retry-After", () => {
  test.each<[string, unknown]>([
    [
      "Sequelize refused",
      Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
        name: "SequelizeConnectionRefusedError",
      }),
    ],
    [
      "Sequelize acquire timeout",
      Object.assign(new Error("Operation timeout"), { name: "SequelizeConnectionAcquireTimeoutError" }),
    ],
    ["pg refused", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
    ["pg terminated", new Error("Connection terminated unexpectedly")],
    [
      "server shutting down",
      Object.assign(new Error("terminating connection due to administrator command"), {
        name: "SequelizeDatabaseError",
        original: { code: "57P01" },
      }),
    ],
    ["too many connections", Object.assign(new Error("sorry, too many clients already"), { code: "53300" })],
  ])("%s", (_name, err) => {
    const answer = toHttpError(err, false);
    expect(answer.status).toBe(503);
    expect(answer.headers["Retry-After"]).toBe("5");
    expect(answer.body.code).toBe("SERVICE_UNAVAILABLE");
  });

  test("a body that does not match its Content-Encoding is a 400", () => {
    const err = Object.assign(new Error("incorrect header check"), { code: "Z_DATA_ERROR" });
    expect(toHttpError(err, false)).toMatchObject({ status: 400, body: { code: "VALIDATION_ERROR" } });
  });
});
