/** The methods that limit how many requests arrive per period. */
export type RateAlgorithm =
  'sliding-window' | 'sliding-window-counter' | 'fixed-window' | 'token-bucket' | 'leaky-bucket';

/**
 * The methods a policy can use: a rate algorithm, or `'concurrency'`, which limits how many calls
 * run at once (`threshold` leases, each living `period` unless renewed).
 */
export type Algorithm = RateAlgorithm | 'concurrency';

/** One policy's parameters for one decision: microseconds and counts, as the scripts get them. */
export interface Params {
  /** The period; with `bounds`, the longest window of the calendar unit (how long keys live). */
  readonly periodUs: number;
  readonly limit: number;
  readonly burst: number;
  readonly cost: number;
  /**
   * A calendar policy's window starts (µs, ascending), from `CalendarWindow.bounds` (policy/calendar-window.ts): the
   * window holding the caller's estimate of now is `[bounds[2], bounds[3])`; the algorithm uses
   * the one that holds its own `now`. Undefined for windows of `periodUs` aligned to the epoch.
   */
  readonly bounds?: readonly number[];
}

/** One policy of a call, as the script's arguments carry it. */
export interface PolicyArgs extends Params {
  readonly algorithm: Algorithm;
  /** Lock-out after a rejection (or, for a block, its length), in µs; 0 for none. */
  readonly blockUs: number;
}

/** Where the memory store keeps each key's state; the twin of the Redis keyspace. */
export interface KeyValues {
  /** The state, or undefined once it has expired or was never written. */
  get(key: string): unknown;
  set(key: string, state: unknown, expiresAtUs: number): void;
  delete(key: string): void;
}

/**
 * The most a charge can put a bucket in debt, in µs of refill or draining past empty: about 31
 * years, as far as a bucket itself may reach (`MAX_BUCKET_US`). A debt that long is as good as
 * forever; bounding it keeps arrival times exact doubles, and TTLs integers Redis accepts,
 * whatever a caller charges. `MAX_DEBT` in `prelude.lua`.
 */
export const MAX_DEBT_US = 1e15;

/** A verdict's `retryAfterUs` when the cost can never fit: no wait would help. */
export const NEVER = -1;

/**
 * A verdict's `retryAfterUs` when only a holder letting go of its lease can make room: that may
 * happen at any moment, so the verdict promises no wait. Clients are told
 * {@link ON_RELEASE_RETRY_US}; a caller that waits asks again as soon as a lease is freed.
 */
export const ON_RELEASE = -2;

/**
 * The decision drivers' `retryAfterUs` for a rejection that only requests still in flight cause,
 * on a policy that counts some outcomes: their outcomes may make room at any moment, so no wait is
 * promised, and no lock-out starts. Clients are told {@link ON_RELEASE_RETRY_US}.
 */
export const ON_OUTCOME = -3;

/** The wait clients are told when only a release can make room: come back in a second. */
export const ON_RELEASE_RETRY_US = 1_000_000;

/** A check's verdict, plus what the algorithm worked out that commit or status will reuse. */
export interface Verdict<W> {
  allowed: boolean;
  /**
   * When rejected: µs until the same cost would fit; {@link NEVER} when it never can;
   * {@link ON_RELEASE} when only a release can make room. When allowed: 0, or for a booking, µs
   * until its slot begins.
   */
  retryAfterUs: number;
  work: W;
}

/** Remaining requests and ms until the state is empty (or full, for buckets) again. */
export interface Outcome {
  remaining: number;
  resetAfterMs: number;
}

/** A state to store and when it stops mattering (the key's TTL). */
export interface Stored<S> {
  state: S;
  expiresAtUs: number;
}

/** What commit leaves behind: the new state, its expiry, and the outcome. */
export interface Committed<S> extends Outcome, Stored<S> {}

/**
 * The in-process twin of one Lua algorithm, so that the memory store and the Redis store answer
 * alike. Each method stands for the Lua function of the same name: the same parameters (µs and
 * counts), the same arithmetic (the same float expressions in the same order wherever rounding
 * could tell them apart), and the same answers (waits in µs, with {@link NEVER} and
 * {@link ON_RELEASE}; resets in ms). The state differs in shape (objects here, Redis types
 * there), so the steps that read and write it differ too; and Lua's `open`, which reads the key,
 * has no twin: `decide.ts` hands each method the state, and the methods drop expired data
 * themselves where `open` does it in Lua.
 */
export interface AlgorithmTwin<S, W> {
  /**
   * Decides whether `p.cost` fits, committing nothing (it may drop expired data, as Lua's `open`
   * does).
   * With `aheadUs`, an algorithm that can book ahead allows a request that fits within that long,
   * with `retryAfterUs` saying when its slot begins.
   */
  check(state: S | undefined, nowUs: number, p: Params, aheadUs?: number): Verdict<W>;
  /**
   * Records the request; called only when every policy of the decision allowed it. `lease` is
   * the decision's lease id, for the algorithms that hand out leases.
   */
  commit(state: S | undefined, nowUs: number, p: Params, work: W, lease?: number): Committed<S>;
  /** Remaining and reset without consuming; used when another policy rejected the request. */
  status(state: S | undefined, nowUs: number, p: Params, work: W): Outcome;
  /** Remaining and reset as `commit` would return them, writing nothing (a peek). */
  after(nowUs: number, p: Params, work: W): Outcome;
  /**
   * Gives `p.cost` back, never past a full quota; with `atUs`, the request that arrived then (on
   * the buckets, never past what they would hold had that request never been made).
   * Returns what to store; undefined when the key is as good as absent (deleted, as Lua does);
   * null when there is nothing to give back and the key stays as it is. `state` may be changed
   * in place.
   */
  refund(
    state: S | undefined,
    nowUs: number,
    p: Params,
    atUs?: number,
  ): Stored<S> | undefined | null;
  /**
   * Rate algorithms only: records `p.cost` more units WITHOUT checking the limit, a reservation's
   * usage beyond its estimate, spent already. With `atUs`, the reservation's arrival: the units go
   * where it was counted (its window; the log's newest entry while the reservation's own is in the
   * log), and nowhere once that no longer counts. The state may go past the limit: a bucket into
   * debt (negative tokens, an arrival time far ahead), a window over its threshold; `check` then
   * rejects until the excess has drained. Returns what to store, or null to leave the key as it
   * is. `state` may be changed in place.
   *
   * @example
   * ```ts
   * // An estimate of 10 tokens was consumed; the call used 60.
   * const left = tokenBucket.charge!(bucket, nowUs, { ...params, cost: 50 }, reservedAtUs);
   * ```
   */
  charge?(state: S | undefined, nowUs: number, p: Params, atUs?: number): Stored<S> | null;
  /** Leases only: the first id from `id` on whose `p.cost` members are all free in `state`. */
  free?(state: S | undefined, p: Params, id: number): number;
  /** Leases only: frees the lease `lease`. Returns what to store, as `refund` does. */
  release?(
    state: S | undefined,
    nowUs: number,
    p: Params,
    lease: number,
  ): Stored<S> | undefined | null;
  /** Leases only: extends the lease by a period from now; null when it is gone (expired, reset). */
  renew?(state: S | undefined, nowUs: number, p: Params, lease: number): Stored<S> | null;
}

/** Microseconds to whole milliseconds, rounded up: a client told to wait never waits too little. */
export function ms(us: number): number {
  return Math.ceil(us / 1000);
}

/**
 * A wait in whole microseconds, rounded up for the same reason, like `us` in `prelude.lua`: waits
 * travel in µs, so that a caller that holds rejections locally can end the hold exactly when the
 * wait does.
 */
export function us(wait: number): number {
  return Math.ceil(wait);
}
