/** The counting methods a policy can use. */
export type Algorithm =
  'sliding-window' | 'sliding-window-counter' | 'fixed-window' | 'token-bucket' | 'leaky-bucket';

/** Short ids used in keys and script arguments. */
export const ALGORITHM_CODES: Readonly<Record<Algorithm, string>> = Object.freeze({
  'sliding-window': 'sw',
  'sliding-window-counter': 'swc',
  'fixed-window': 'fw',
  'token-bucket': 'tb',
  'leaky-bucket': 'gcra',
});

/** One policy's parameters for one decision: microseconds and counts, as the scripts get them. */
export interface Params {
  readonly periodUs: number;
  readonly limit: number;
  readonly burst: number;
  readonly cost: number;
}

/** A check's verdict, plus what the algorithm worked out that commit or status will reuse. */
export interface Verdict<W> {
  allowed: boolean;
  /** When rejected: ms until the same cost would fit; -1 when it never can. */
  retryAfterMs: number;
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
 * The in-process twin of one Lua algorithm. Each method mirrors the Lua function of the same
 * name line by line, so the memory store and the Redis store answer alike.
 */
export interface AlgorithmTwin<S, W> {
  /** Decides whether `p.cost` fits, committing nothing (it may drop expired data, as Lua does). */
  check(state: S | undefined, nowUs: number, p: Params): Verdict<W>;
  /** Records the request; called only when every policy of the decision allowed it. */
  commit(state: S | undefined, nowUs: number, p: Params, work: W): Committed<S>;
  /** Remaining and reset without consuming; used when another policy rejected the request. */
  status(state: S | undefined, nowUs: number, p: Params, work: W): Outcome;
  /** Remaining and reset as `commit` would return them, writing nothing (a peek). */
  after(nowUs: number, p: Params, work: W): Outcome;
  /**
   * Gives `p.cost` back, never past a full quota; with `atUs`, the request that arrived then.
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
}

/** Microseconds to whole milliseconds, rounded up: a client told to wait never waits too little. */
export function ms(us: number): number {
  return Math.ceil(us / 1000);
}

/** Every algorithm, in the order the documentation lists them. */
export const ALGORITHMS: readonly Algorithm[] = Object.freeze(
  Object.keys(ALGORITHM_CODES) as Algorithm[],
);
