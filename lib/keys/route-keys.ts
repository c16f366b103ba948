import { createHash } from 'node:crypto';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';

// Characters that would make two different (route, tracker) pairs spell the same key, break the
// Redis hash tag, or garble logs. Surrogates are escaped too: a lone one turns into U+FFFD when
// sent as UTF-8, so two different strings could otherwise reach Redis as the same bytes.
// eslint-disable-next-line no-control-regex -- control characters are exactly what must be escaped
const UNSAFE = /[%{}|#\u0000-\u001f\u007f\ud800-\udfff]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');

const AT = '@'.charCodeAt(0);
const BAR = '|'.charCodeAt(0);

/** Longest encoded part kept readable; longer ones are replaced by a digest. */
export const MAX_KEY_PART = 200;

/**
 * Encodes one key component so that the mapping is injective and the result is short:
 * unsafe characters become `%XX` / `%uXXXX`, and anything whose encoding would be longer than
 * {@link MAX_KEY_PART} becomes `#` + a SHA-256 digest (a literal part can never start with `#`).
 */
export function encodeKeyPart(value: string): string {
  // Escaping never shortens a string, so a long one is hashed without escaping it first.
  if (value.length > MAX_KEY_PART) return digest(value);
  const escaped = UNSAFE.test(value) ? value.replace(UNSAFE_ALL, escapeChar) : value;
  return escaped.length <= MAX_KEY_PART ? escaped : digest(value);
}

/**
 * The value an {@link encodeKeyPart} part was made from; undefined for a digest (`#…`) or a
 * stand-in (`%!…`), which keep no value to give back.
 */
export function decodeKeyPart(part: string): string | undefined {
  if (part.startsWith('#') || part.startsWith('%!')) return undefined;
  return part.replace(/%u([0-9A-F]{4})|%([0-9A-F]{2})/g, (_, wide?: string, narrow?: string) =>
    String.fromCharCode(parseInt(wide ?? narrow!, 16)),
  );
}

/**
 * A key part that stands in for a tracker that could not be had, `value` being what counts the
 * call instead. No {@link encodeKeyPart} result can spell it: there, `%` always starts an escape.
 */
export function standInKeyPart(value: string): string {
  return '%!' + encodeKeyPart(value);
}

// UTF-16 code units keep every string apart, lone surrogates included, unlike UTF-8.
function digest(value: string): string {
  return '#' + createHash('sha256').update(value, 'utf16le').digest('base64url');
}

function escapeChar(c: string): string {
  const code = c.charCodeAt(0);
  return code > 0xff
    ? '%u' + code.toString(16).toUpperCase().padStart(4, '0')
    : '%' + code.toString(16).toUpperCase().padStart(2, '0');
}

/**
 * Every key shape, in one place. Route keys read `<prefix>:{<route>|<tracker>}:<index>:<policy id>`;
 * a route whose policies count different trackers reads `<prefix>:{<route>}|<tracker>:<index>:<id>`;
 * `RateLimitService` keys read `<prefix>:{<key>}:<index>:<policy id>`. A route where some policy
 * shares its budget beyond the route (`scope`) keys every policy by its tracker first:
 * `<prefix>:{<tracker>}@<scope mark>:<policy id>` for a shared one, and
 * `<prefix>:{<tracker>}@r|<route>:<index>:<policy id>` for one counted per route. Everything
 * between the braces is the Redis Cluster hash tag, so all keys of one decision land in one slot.
 * The shapes never meet: encoded parts hold no `{`, `}` or `|`, so what follows the first `}` (`:`,
 * `|` or `@`) and whether a `|` precedes it tell them apart.
 */
export class RouteKeys {
  constructor(private readonly prefix: string) {}

  /** The constant part of a route's keys, computed once per route: `<prefix>:{<route>|`. */
  routeHead(route: string): string {
    return `${this.prefix}:{${encodeKeyPart(route)}|`;
  }

  /**
   * What follows the tracker in a route key for the policy at `index`: `}:<index>:<policy id>`.
   * The position keeps two policies apart even when per-request values make them look alike.
   */
  static tail(policy: ResolvedPolicy, index: number): string {
    return `}:${index}:${policy.id}`;
  }

  /**
   * The constant part of the keys of a route whose policies count different trackers:
   * `<prefix>:{<route>}|`. The route alone is the hash tag, so one decision's keys still share a
   * slot; the brace before `|` keeps these keys apart from those of {@link routeHead}.
   */
  routeTagHead(route: string): string {
    return `${this.prefix}:{${encodeKeyPart(route)}}|`;
  }

  /** What follows the tracker in a {@link routeTagHead} key: `:<index>:<policy id>`. */
  static tagTail(policy: ResolvedPolicy, index: number): string {
    return `:${index}:${policy.id}`;
  }

  /** A key for programmatic use; the missing `|` keeps it apart from every route key. */
  forKey(key: string, policy: ResolvedPolicy, index: number): string {
    return `${this.prefix}:{${encodeKeyPart(key)}${RouteKeys.tail(policy, index)}`;
  }

  /**
   * The constant part of every key of a route with a shared scope, for one tracker (`part`,
   * already encoded): `<prefix>:{<tracker>}@`. The tracker alone is the hash tag, so that a
   * shared key is the same from every route and sits in one slot with the route's own keys.
   */
  scopedHead(part: string): string {
    return `${this.prefix}:{${part}}@`;
  }

  /**
   * What follows {@link scopedHead} for a policy whose budget lives in `mark` (see `scopeMark`):
   * `<mark>:<policy id>`. Neither route nor position: the same from every route.
   */
  static sharedTail(mark: string, policy: ResolvedPolicy): string {
    return `${mark}:${policy.id}`;
  }

  /** The route's part of a key after {@link scopedHead}, for its per-route policies: `r|<route>:`. */
  static scopedRoute(route: string): string {
    return `r|${encodeKeyPart(route)}:`;
  }

  /** What follows {@link scopedHead} for a per-route policy: `r|<route>:<index>:<policy id>`. */
  static scopedRouteTail(routePart: string, policy: ResolvedPolicy, index: number): string {
    return `${routePart}${index}:${policy.id}`;
  }

  /**
   * The ledger of a route key whose policy counts only some outcomes: the requests it counted
   * whose outcome is not known yet (see `decide.lua`). In the key's slot, since it only adds to
   * what follows the hash tag.
   */
  static ledgerOf(key: string): string {
    return `${key}|pending`;
  }

  /**
   * Where the tracker's part sits in a route key made for `policy` at `index`, whatever its shape:
   * `[start, end)`, or undefined for a key of no route shape. Encoded parts hold no brace or `|`,
   * and a prefix no brace, so the first `{` opens the hash tag and the first `}` after it closes it.
   */
  static trackerSpan(
    key: string,
    policy: ResolvedPolicy,
    index: number,
  ): [number, number] | undefined {
    const open = key.indexOf('{');
    const close = key.indexOf('}', open);
    if (open === -1 || close === -1) return undefined;
    const after = key.charCodeAt(close + 1);
    if (after === AT) return [open + 1, close];
    const bar = key.indexOf('|', open);
    if (bar !== -1 && bar < close) return [bar + 1, close];
    if (after !== BAR) return undefined;
    const end = key.length - RouteKeys.tagTail(policy, index).length;
    return end >= close + 2 ? [close + 2, end] : undefined;
  }

  /** `RateLimitService`'s keys: one per policy under the caller's `key`. */
  forService(key: string, policies: readonly ResolvedPolicy[]): string[] {
    return policies.map((p, i) => this.forKey(key, p, i));
  }

  /**
   * The key of policy `index` on a route whose policy has a tracker of its own (`part`, already
   * encoded); with `routeTag`, the route alone is the hash tag.
   */
  withTracker(
    route: string,
    routeTag: boolean,
    part: string,
    policy: ResolvedPolicy,
    index: number,
  ): string {
    return routeTag
      ? `${this.routeTagHead(route)}${part}${RouteKeys.tagTail(policy, index)}`
      : `${this.routeHead(route)}${part}${RouteKeys.tail(policy, index)}`;
  }
}

// Kept apart from the module's trackers (`user:…`, `ip:…`), so that a policy's value, say a
// username, can never name another caller's bucket.
export const POLICY_TRACKER_MARK = '~';

/** A policy tracker's value, marked and encoded; undefined (the module's tracker then) when empty. */
export function policyTrackerPart(value: unknown, where: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) {
    return encodeKeyPart(POLICY_TRACKER_MARK + value);
  }
  throw new TypeError(
    `${where}: tracker must return a string (or nothing); it returned ${typeof value}`,
  );
}
