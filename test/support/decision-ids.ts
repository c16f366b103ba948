/**
 * Redis keeps a decision's id key (`<prefix>:{<tag>}:id:<id>`) for a moment after each decision
 * that applied something, so that a copy of the decision never applies again. Suites that list
 * the keys holding rate-limit state leave these out.
 */

/** Whether `key` is a decision's id key. */
export const isDecisionIdKey = (key: string): boolean => /\}:id:[\w-]+$/.test(key);

/** The keys that hold rate-limit state: `keys` without decisions' id keys. */
export const stateKeys = (keys: readonly string[]): string[] =>
  keys.filter((key) => !isDecisionIdKey(key));
