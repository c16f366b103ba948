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
}

/** Every field of {@link ConsumeOptions}; any other is rejected as a typo. */
export const CONSUME_OPTION_FIELDS = { cost: true } as const satisfies FieldList<ConsumeOptions>;

/** Every field of {@link AcquireOptions}. */
export const ACQUIRE_OPTION_FIELDS = {
  ...CONSUME_OPTION_FIELDS,
  maxWait: true,
  signal: true,
} as const satisfies FieldList<AcquireOptions>;

const CONSUME_FIELDS = knownFields(CONSUME_OPTION_FIELDS, {
  maxWait: 'maxWait applies only to acquire() and run()',
  signal: 'signal applies only to acquire() and run()',
});
const ACQUIRE_FIELDS = knownFields(ACQUIRE_OPTION_FIELDS);

/**
 * Checks the options of one call: an object with no field its method does not take. Per call,
 * so kept to a loop over the few fields given.
 */
export function checkCallOptions(options: unknown, acquires: boolean, where: string): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') {
    throw configError(where, 'options', options, 'an object like { cost: 2 }');
  }
  checkFields(options, acquires ? ACQUIRE_FIELDS : CONSUME_FIELDS, where);
}
