/** Unknown fields: a misspelled option fails loudly, naming the known field it is nearest to. */
import { RateLimitConfigError } from './validation.js';

/**
 * Every field of `T`, each `true`. Write a shape's list as `{ ... } satisfies FieldList<T>` next
 * to its interface: TypeScript then rejects a list that misses a field or names one `T` lacks.
 */
export type FieldList<T> = { readonly [K in keyof Required<T>]: true };

/** A shape's fields, ready for {@link checkFields}. */
export interface KnownFields {
  readonly names: readonly string[];
  readonly has: ReadonlySet<string>;
  /** Fields of another shape, and why they are not taken here. */
  readonly elsewhere: ReadonlyMap<string, string>;
}

/**
 * Builds the check for one shape, once, from its field list. `elsewhere` explains fields that
 * belong to another shape, e.g. a route-only field given to the service.
 */
export function knownFields(
  list: object,
  elsewhere: Readonly<Record<string, string>> = {},
): KnownFields {
  const names = Object.keys(list);
  return { names, has: new Set(names), elsewhere: new Map(Object.entries(elsewhere)) };
}

/**
 * Throws for the first field of `value` its shape does not have. A loop over a few keys and set
 * lookups: cheap enough for a per-call options object.
 */
export function checkFields(value: object, known: KnownFields, where: string): void {
  for (const field in value) {
    if (!known.has.has(field)) throw unknownField(field, known, where);
  }
}

/**
 * `<where>: unknown field "treshold" (did you mean "threshold"?)`, or why it is not taken, or the
 * field a name from @nestjs/throttler stands for, which no typo distance would find.
 */
function unknownField(field: string, known: KnownFields, where: string): RateLimitConfigError {
  const meant = THROTTLER_NAMES.get(field);
  const reason =
    known.elsewhere.get(field) ??
    (meant !== undefined && known.has.has(meant) ? throttlerSuggestion(field) : undefined);
  const nearest = reason === undefined ? nearestField(field, known.names) : undefined;
  const hint =
    reason ??
    (nearest === undefined
      ? `known fields: ${known.names.join(', ')}`
      : `did you mean "${nearest}"?`);
  return new RateLimitConfigError(`${where}: unknown field ${JSON.stringify(field)} (${hint})`);
}

/** The fields of a policy that @nestjs/throttler names otherwise: its name, and the one here. */
const THROTTLER_NAMES: ReadonlyMap<string, string> = new Map([
  ['ttl', 'period'],
  ['limit', 'threshold'],
]);

/**
 * `did you mean "period"? ttl is @nestjs/throttler's name (...)` for `ttl` and `limit`, which
 * someone moving from the throttler writes by habit; undefined for any other field.
 */
export function throttlerSuggestion(field: string): string | undefined {
  const meant = THROTTLER_NAMES.get(field);
  if (meant === undefined) return undefined;
  // The throttler counts ttl in milliseconds: a value copied as it is would be 1000 times too long.
  const units = field === 'ttl' ? `; ${meant} is in seconds or a string like '1m', not ms` : '';
  return `did you mean "${meant}"? ${field} is @nestjs/throttler's name${units}`;
}

/**
 * The known field a typo most likely meant: the closest one ignoring case, at most one edit away
 * for names of up to four letters (`cots`), two for longer ones (`blockDuraton`). Ties go to the
 * field listed first.
 */
export function nearestField(field: string, names: readonly string[]): string | undefined {
  const typed = field.toLowerCase();
  const limit = typed.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const name of names) {
    const distance = editDistance(typed, name.toLowerCase());
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`: the optimal
 * string alignment distance, which counts a swapped pair (`maxWiat`) as one typo.
 */
export function editDistance(a: string, b: string): number {
  // Three rows suffice: the swap looks two back.
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  let current = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const substitution = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + substitution);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        current[j] = Math.min(current[j], before[j - 2] + 1);
      }
    }
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length];
}
