import { type Algorithm, type AlgorithmTwin } from './algorithm.js';
import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';

/** Everything the rest of the library may know about one algorithm. */
export interface AlgorithmEntry {
  readonly name: Algorithm;
  /** Its short id in keys and script arguments. */
  readonly code: string;
  /** Its Lua file in this folder, without `.lua`. */
  readonly lua: string;
  /** Its in-process twin, for the memory store. */
  readonly twin: AlgorithmTwin<unknown, unknown>;
  /** It can book a future slot in the call that answers, so a waiter waits once. */
  readonly bookable: boolean;
  /** It takes a `burst` beside its `threshold`. */
  readonly takesBurst: boolean;
  /** It limits calls running at once with leases, held until released; else it limits a rate. */
  readonly holdsLeases: boolean;
}

const entry = <S, W>(
  name: Algorithm,
  code: string,
  lua: string,
  twin: AlgorithmTwin<S, W>,
  traits: Partial<Pick<AlgorithmEntry, 'bookable' | 'takesBurst' | 'holdsLeases'>> = {},
): AlgorithmEntry =>
  Object.freeze({
    name,
    code,
    lua,
    twin: twin as AlgorithmTwin<unknown, unknown>,
    bookable: traits.bookable ?? false,
    takesBurst: traits.takesBurst ?? false,
    holdsLeases: traits.holdsLeases ?? false,
  });

const BUCKET = { bookable: true, takesBurst: true } as const;

/** Every algorithm, in the order the documentation lists them: the one list of them. */
export const REGISTRY: readonly AlgorithmEntry[] = Object.freeze([
  entry('sliding-window', 'sw', 'sliding-window', slidingWindow),
  entry('sliding-window-counter', 'swc', 'sliding-window-counter', slidingWindowCounter),
  entry('fixed-window', 'fw', 'fixed-window', fixedWindow),
  entry('token-bucket', 'tb', 'token-bucket', tokenBucket, BUCKET),
  entry('leaky-bucket', 'gcra', 'gcra', gcra, BUCKET),
  entry('concurrency', 'cc', 'concurrency', concurrency, { holdsLeases: true }),
]);

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
