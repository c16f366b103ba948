import { type ExecutionContext, HttpException } from '@nestjs/common';
import { isError } from '../stores/errors.js';
import { type ResolvedRateLimitOptions } from '../options/rate-limit.options.js';
import { Deadlines } from '../stores/resilience/deadlines.js';
import { answerFor, chooseAnswer } from '../stores/resilience/store-error-answers.js';
import { type OutageLogger } from '../stores/resilience/resilient.store.js';
import { type Limits } from '../store-contract/store-call.js';
import {
  type StoreErrorHandler,
  type StoreErrorPolicy,
} from '../store-contract/store.interface.js';

/** The functions of yours a route awaits before it can decide. */
export type UserFunction = 'getTracker' | 'tracker' | 'threshold' | 'period' | 'cost' | 'anchor';

/**
 * What `onStoreError` (when a function) is told when a function of yours did not settle within
 * `functionTimeout`: which function, and where.
 */
export class UserFunctionTimeoutError extends Error {
  override readonly name = 'UserFunctionTimeoutError';
  constructor(
    readonly fn: UserFunction,
    /** E.g. `@RateLimit on ItemsController.list`. */
    readonly where: string,
    readonly timeoutMs: number,
  ) {
    super(`${fn} did not settle within ${timeoutMs}ms for ${where}`);
  }
}

/**
 * A function of yours threw, or its promise rejected: the call fails with this error, which names
 * the function and the route; `cause` is what was thrown. Never taken for a store failure.
 */
export class UserFunctionError extends Error {
  override readonly name = 'UserFunctionError';
  constructor(
    readonly fn: UserFunction,
    /** E.g. `@RateLimit on ItemsController.list`. */
    readonly where: string,
    cause: unknown,
  ) {
    const thrown = isError(cause) ? `${cause.name}: ${cause.message}` : String(cause);
    super(`${where}: ${fn} threw ${thrown}`, { cause });
  }
}

/**
 * What the call fails with when a function of yours throws `error`: a {@link UserFunctionError},
 * save for an exception Nest answers by itself (an `HttpException`, or a `WsException` or
 * `RpcException`, known by their `getError`), which a function may throw on purpose, as a guard
 * may, to turn the call away with it.
 */
export function userFunctionError(fn: UserFunction, where: string, error: unknown): unknown {
  if (error instanceof HttpException || error instanceof UserFunctionError) return error;
  if (isError(error) && typeof (error as { getError?: unknown }).getError === 'function') {
    return error;
  }
  return new UserFunctionError(fn, where, error);
}

/**
 * Calls a function of yours with the call's context; what it throws fails the call as
 * {@link userFunctionError} says.
 */
export function callUserFunction<T>(
  f: (context: ExecutionContext) => T,
  fn: UserFunction,
  context: ExecutionContext,
  where: string,
): T {
  try {
    return f(context);
  } catch (error) {
    throw userFunctionError(fn, where, error);
  }
}

/** What a bounded promise settles to when its function did not settle in time. */
export const EXPIRED: unique symbol = Symbol('expired');
export type Expired = typeof EXPIRED;

/** Bounds a promise one of your functions returned; see {@link UserFunctionBounds}. */
export interface FunctionBound {
  settle<T>(
    value: Promise<T>,
    fn: UserFunction,
    context: ExecutionContext,
    where: string,
  ): Promise<T | Expired>;
}

// Every expiry rejects with this one object: nothing is made per expiry, and no error of the
// function's own can be mistaken for it.
const EXPIRY = new Error('expired');
// A function that keeps expiring on a route is reported again after this long, with a count.
const REPORT_EVERY_MS = 60_000;

const ANSWERS: Readonly<Record<StoreErrorPolicy, string>> = {
  memory: 'deciding it per instance in memory',
  allow: 'allowing it',
  deny: 'denying it with 503',
};
/** What stands in for a missing value while memory decides. */
const STAND_INS: Readonly<Record<UserFunction, string>> = {
  getTracker: 'counted by the default tracker (user id, else IP)',
  tracker: "counted by the module's tracker",
  threshold: 'with the default threshold',
  period: 'with the default period',
  cost: 'at cost 1',
  anchor: 'with windows from midnight',
};

/** A call one of whose functions expired: the module's answer for it, and what expired where. */
interface Expiry {
  readonly answer: StoreErrorPolicy;
  readonly where: string;
  readonly fns: UserFunction[];
}

/** Reports of one route's function that keeps expiring. */
interface Report {
  at: number;
  since: number;
}

/**
 * Puts one bound, `functionTimeout`, on every promise a route awaits from your functions
 * (`getTracker`, a policy's `tracker`, and dynamic `threshold`, `period`, `cost`), with one shared
 * interval: each gets the same bound, so deadlines arrive in order (see {@link Deadlines}). A
 * function that returns a plain value never comes here. On expiry the value is missing, the
 * request is answered as `onStoreError` says (the module's, or a policy's own), and a warning
 * names the route and the function, once a minute at most per route and function.
 */
export class UserFunctionBounds implements FunctionBound {
  private readonly deadlines: Deadlines;
  /** Calls one of whose functions expired; calls without expiries are absent. */
  private readonly expired = new WeakMap<ExecutionContext, Expiry>();
  /**
   * Calls in `expired` not yet asked about: while 0, no call needs looking up. A call that failed
   * after an expiry is never asked about (nor warned of: its error says more); the lookups it
   * leaves are only slower, never wrong.
   */
  private undecided = 0;
  private readonly reports = new Map<string, Report>();
  private readonly timeoutMs: number;
  private readonly onStoreError: StoreErrorPolicy | StoreErrorHandler;

  constructor(
    options: Pick<ResolvedRateLimitOptions, 'functionTimeout' | 'onStoreError'>,
    private readonly logger: OutageLogger,
  ) {
    this.timeoutMs = options.functionTimeout;
    this.onStoreError = options.onStoreError;
    this.deadlines = new Deadlines(this.timeoutMs, () => EXPIRY);
  }

  settle<T>(
    value: Promise<T>,
    fn: UserFunction,
    context: ExecutionContext,
    where: string,
  ): Promise<T | Expired> {
    return this.deadlines.race(value).catch((error: unknown) => {
      if (error !== EXPIRY) throw userFunctionError(fn, where, error);
      this.expire(fn, context, where);
      return EXPIRED;
    });
  }

  /**
   * `limits` as the call is decided: as they are, or, when one of its functions expired, marked
   * to be answered as `onStoreError` says, as if the store had failed (see
   * `Limits.answerWithout`): the module's answer, or that of the policies that have their own
   * (the strictest wins). The warnings are logged here, once the answer is known.
   */
  marked(context: ExecutionContext, limits: Limits): Limits {
    if (this.undecided === 0) return limits;
    const expiry = this.expired.get(context);
    if (expiry === undefined) return limits;
    this.expired.delete(context);
    this.undecided--;
    const answer = answerFor(limits.policies, expiry.answer);
    for (const fn of expiry.fns) this.report(fn, expiry.where, answer);
    return { ...limits, answerWithout: answer };
  }

  private expire(fn: UserFunction, context: ExecutionContext, where: string): void {
    let expiry = this.expired.get(context);
    if (expiry === undefined) {
      expiry = { answer: this.choose(fn, where), where, fns: [] };
      this.expired.set(context, expiry);
      this.undecided++;
    }
    expiry.fns.push(fn);
  }

  /** What `onStoreError` answers for the expiry; a handler that throws gets `'memory'`. */
  private choose(fn: UserFunction, where: string): StoreErrorPolicy {
    const handler = this.onStoreError;
    if (typeof handler !== 'function') return handler;
    // Made only for a handler: a flood of expiries builds no stack traces otherwise.
    return chooseAnswer(handler, new UserFunctionTimeoutError(fn, where, this.timeoutMs));
  }

  private report(fn: UserFunction, where: string, answer: StoreErrorPolicy): void {
    const key = `${where}\u0000${fn}`;
    const now = performance.now();
    const last = this.reports.get(key);
    if (last !== undefined && now - last.at < REPORT_EVERY_MS) {
      last.since++;
      return;
    }
    const again = last === undefined ? '' : ` (${last.since + 1} times since the last warning)`;
    const standIn = answer === 'memory' ? `, ${STAND_INS[fn]}` : '';
    this.reports.set(key, { at: now, since: 0 });
    this.logger.warn(
      `${fn} did not settle within ${this.timeoutMs}ms for ${where}${again}; ${ANSWERS[answer]}${standIn}, as onStoreError says`,
    );
  }
}
