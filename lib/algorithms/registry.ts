import { type Algorithm, type AlgorithmTwin, type RateAlgorithm } from './algorithm.js';
import { concurrency } from './kinds/concurrency.js';
import { fixedWindow } from './kinds/fixed-window.js';
import { leakyBucket } from './kinds/leaky-bucket.js';
import { slidingWindowCounter } from './kinds/sliding-window-counter.js';
import { slidingWindow } from './kinds/sliding-window.js';
import { tokenBucket } from './kinds/token-bucket.js';

/** Everything the rest of the library may know about one algorithm. */
export interface AlgorithmEntry {
  readonly name: Algorithm;
  /** Its short id in keys and script arguments. */
  readonly code: string;
  /** Its Lua file in `kinds/`, beside its twin, without `.lua`. */
  readonly lua: string;
  /** Its in-process twin, for the memory store. */
  readonly twin: AlgorithmTwin<unknown, unknown>;
  /** It can book a future slot in the call that answers, so a waiter waits once. */
  readonly bookable: boolean;
  /** It takes a `burst` beside its `threshold`. */
  readonly takesBurst: boolean;
  /** It limits calls running at once with leases, held until released; else it limits a rate. */
  readonly holdsLeases: boolean;
  /** It counts in windows that can follow the calendar (`calendar`) instead of the period. */
  readonly followsCalendar: boolean;
}

type Traits = Partial<
  Pick<AlgorithmEntry, 'bookable' | 'takesBurst' | 'holdsLeases' | 'followsCalendar'>
>;

const entry = <S, W>(
  code: string,
  lua: string,
  twin: AlgorithmTwin<S, W>,
  traits: Traits = {},
): Omit<AlgorithmEntry, 'name'> => ({
  code,
  lua,
  twin: twin as AlgorithmTwin<unknown, unknown>,
  bookable: traits.bookable ?? false,
  takesBurst: traits.takesBurst ?? false,
  holdsLeases: traits.holdsLeases ?? false,
  followsCalendar: traits.followsCalendar ?? false,
});

const BUCKET: Traits = { bookable: true, takesBurst: true };
const WINDOWS: Traits = { followsCalendar: true };

// Keyed by name, so that the compiler holds this list and the `Algorithm` type to each other: a
// name missing here, or one the type does not know, does not compile.
const ENTRIES = {
  'sliding-window': entry('sw', 'sliding-window', slidingWindow),
  'sliding-window-counter': entry('swc', 'sliding-window-counter', slidingWindowCounter, WINDOWS),
  'fixed-window': entry('fw', 'fixed-window', fixedWindow, WINDOWS),
  'token-bucket': entry('tb', 'token-bucket', tokenBucket, BUCKET),
  'leaky-bucket': entry('gcra', 'leaky-bucket', leakyBucket, BUCKET),
  concurrency: entry('cc', 'concurrency', concurrency, { holdsLeases: true }),
} satisfies Record<Algorithm, Omit<AlgorithmEntry, 'name'>>;

/** Every algorithm, in the order the documentation lists them: the one list of them. */
export const REGISTRY: readonly AlgorithmEntry[] = Object.freeze(
  Object.entries(ENTRIES).map(([name, e]) => Object.freeze({ name: name as Algorithm, ...e })),
);

const BY_NAME: ReadonlyMap<string, AlgorithmEntry> = new Map(REGISTRY.map((e) => [e.name, e]));

/** The entry of a known algorithm. */
export function algorithmOf(name: Algorithm): AlgorithmEntry {
  return BY_NAME.get(name)!;
}

/** Whether `value` names an algorithm. */
export function isAlgorithm(value: unknown): value is Algorithm {
  return typeof value === 'string' && BY_NAME.has(value);
}

/** Whether any of these policies holds leases (`'concurrency'`). */
export function anyHoldsLeases(policies: readonly { readonly algorithm: Algorithm }[]): boolean {
  for (const p of policies) if (BY_NAME.get(p.algorithm)!.holdsLeases) return true;
  return false;
}

/** Every rate algorithm (all but those that hold leases), in the order the documentation lists them. */
export const RATE_ALGORITHMS: readonly RateAlgorithm[] = Object.freeze(
  REGISTRY.filter((e) => !e.holdsLeases).map((e) => e.name as RateAlgorithm),
);

/** The algorithm of a policy that names none: the exact sliding log. */
export const DEFAULT_ALGORITHM: Algorithm = 'sliding-window';

/**
 * The algorithm of a quota by the calendar that names none: a count per calendar window. The
 * sliding log has no windows to line up with the calendar.
 */
export const DEFAULT_CALENDAR_ALGORITHM: Algorithm = 'fixed-window';

/** The algorithm of a policy that names none, by whether it counts in calendar windows. */
export function defaultAlgorithm(followsCalendar: boolean): Algorithm {
  return followsCalendar ? DEFAULT_CALENDAR_ALGORITHM : DEFAULT_ALGORITHM;
}
