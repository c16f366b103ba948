import { randomBytes } from 'node:crypto';

// 48 random bits per process, so that two processes' ids meet only by a chance too small to
// matter (and then only on the same key, within the few hundred ms an id is kept).
const PROCESS_PART = randomBytes(6).toString('base64url');
let counter = 0;

/**
 * The id key of a new decision on `firstKey`, the decision's first key: Redis keeps the reply of
 * a decision that applied something there, briefly, and answers a copy of the decision (a command
 * a client resent after a reconnect, or the store's own retry after a lost reply) with it instead
 * of applying it again (see `decide.lua`).
 *
 * The key is `firstKey` up to the end of its hash tag, then `:id:` and an id unique across
 * processes: `rate-limit:{GET /items|ip:203.0.113.7}:id:Xk3_aB9q1f`. It keeps the key prefix and
 * shares the decision's slot on a Cluster. The module's keys always have a tag; a key without
 * one becomes the tag (`{<key>}:id:…`), which is its own slot unless it contains a `}`.
 *
 * @example
 * ```ts
 * decisionIdKey('rl:{user:42}:0:sw:100-per-1m'); // 'rl:{user:42}:id:Xk3_aB9q1a'
 * ```
 */
export function decisionIdKey(firstKey: string): string {
  const id = PROCESS_PART + (counter++).toString(36);
  const open = firstKey.indexOf('{');
  const close = open < 0 ? -1 : firstKey.indexOf('}', open + 1);
  // Redis's rule: the first `{`, and the first `}` after it, with something in between.
  if (close > open + 1) return `${firstKey.slice(0, close + 1)}:id:${id}`;
  return `{${firstKey}}:id:${id}`;
}

/**
 * This process's part of every decision id: a decision whose reply Redis keeps in the function
 * library's memory rather than under an id key carries it, and {@link decisionNumber}, as two
 * arguments (see `recall` in once.lua).
 */
export const DECISION_SENDER = PROCESS_PART;

/** The next decision's number, unique within this process (see {@link DECISION_SENDER}). */
export function decisionNumber(): string {
  return String(counter++);
}
