import { type Duration } from '../policy/rate-limit.policy.js';
import { checkFields, type FieldList, knownFields } from '../policy/known-fields.js';
import { configError } from '../policy/validation.js';

/** Options of one `consume()`, `peek()` or `refund()` call. */
export interface ConsumeOptions {
  /**
   * How many requests this call counts as (or gives back), for every policy. Default: each
   * policy's `cost`, else 1.
   */
  cost?: number;
}

/** Options of one `acquire()` or `run()` call. */
export interface AcquireOptions extends ConsumeOptions {
  /**
   * Longest time to wait for a slot. A call that cannot proceed within it is rejected at once,
   * not after waiting. A number means seconds; 0 never waits. Default: the longest period
   * among the policies.
   */
  maxWait?: Duration;
  /** Cancels the wait: `acquire` rejects with the signal's reason, and a booked slot is given back. */
  signal?: AbortSignal;
  /**
   * Default true: as whatever you call sees the starts, no span of one `period` holds more than
   * `threshold` of them, across instances, however late a start runs behind its slot. It costs
   * about 8% of the rate (a sliding-window or bucket policy's period is stretched by a twelfth),
   * and a call that would start more than half that margin late books a new slot. False:
   * slots exactly the policy's spacing apart, at its full rate, and a late start may bunch with
   * the next. Not taken with `usage`, whose cost is not a call.
   */
  strict?: boolean;
}

/** Options of one `reserve()` call. */
export interface ReserveOptions {
  /**
   * Longest time to wait for the estimate to fit, as `acquire` waits. A number means seconds.
   * Default 0: a reservation that does not fit now is rejected at once.
   */
  maxWait?: Duration;
  /** Cancels the wait: `reserve` rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Options of one `run()` call. */
export interface RunOptions<T> extends AcquireOptions {
  /**
   * Makes the call a reservation: `cost` (or each policy's) is the estimate, and once `fn`
   * resolves, what this returns for its result is settled as the usage (see `reserve`). When
   * `fn` throws, the estimate stays counted. Not for `'concurrency'` policies.
   *
   * @example
   * ```ts
   * const reply = await rateLimit.run(`tokens:${userId}`, TOKENS_PER_DAY, () => model.complete(prompt), {
   *   cost: 2_000,
   *   usage: (r) => r.usage.total_tokens,
   * });
   * ```
   */
  usage?: (result: T) => number;
}

/** Every field of {@link ConsumeOptions}; any other is rejected as a typo. */
export const CONSUME_OPTION_FIELDS = { cost: true } as const satisfies FieldList<ConsumeOptions>;

/** Every field of {@link AcquireOptions}. */
export const ACQUIRE_OPTION_FIELDS = {
  ...CONSUME_OPTION_FIELDS,
  maxWait: true,
  signal: true,
  strict: true,
} as const satisfies FieldList<AcquireOptions>;

/** Every field of {@link RunOptions}. */
export const RUN_OPTION_FIELDS = {
  ...ACQUIRE_OPTION_FIELDS,
  usage: true,
} as const satisfies FieldList<RunOptions<unknown>>;

/** Every field of {@link ReserveOptions}. */
export const RESERVE_OPTION_FIELDS = {
  maxWait: true,
  signal: true,
} as const satisfies FieldList<ReserveOptions>;

/** Which options each kind of call takes. */
export type CallKind = 'consume' | 'acquire' | 'run' | 'reserve';

const ONLY_WAITERS = 'applies only to acquire(), run() and reserve()';
const CALL_FIELDS = {
  consume: knownFields(CONSUME_OPTION_FIELDS, {
    maxWait: `maxWait ${ONLY_WAITERS}`,
    signal: `signal ${ONLY_WAITERS}`,
    strict: 'strict applies only to acquire() and run()',
    usage: 'usage applies only to run(); reserve() returns a ticket to settle',
  }),
  acquire: knownFields(ACQUIRE_OPTION_FIELDS, {
    usage: 'usage applies only to run(); reserve() returns a ticket to settle',
  }),
  run: knownFields(RUN_OPTION_FIELDS),
  reserve: knownFields(RESERVE_OPTION_FIELDS, {
    cost: "the estimate is reserve()'s third argument",
    strict: 'strict applies only to acquire() and run()',
    usage: 'usage is what settle() takes',
  }),
};

/**
 * Checks the options of one call: an object with no field its method does not take. Per call,
 * so kept to a loop over the few fields given.
 */
export function checkCallOptions(options: unknown, kind: CallKind, where: string): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') {
    const like = kind === 'reserve' ? "{ maxWait: '5s' }" : '{ cost: 2 }';
    throw configError(where, 'options', options, `an object like ${like}`);
  }
  checkFields(options, CALL_FIELDS[kind], where);
}
