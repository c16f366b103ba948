import {
  decodeKeyPart,
  encodeKeyPart,
  POLICY_TRACKER_MARK,
  policyTrackerPart,
  RouteKeys,
} from '../keys/route-keys.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type Limits } from '../store-contract/store-call.js';

/**
 * A policy's key on a route with the tracker's part taken out: `before + part + after`. Plain
 * data, so that instances can share it: an instance that never decided on the route finds the
 * policy by its name and id among those it knows.
 */
export interface KeyTemplate {
  /** The policy's place among the route's. */
  readonly index: number;
  readonly policyName: string;
  readonly policyId: string;
  readonly before: string;
  readonly after: string;
  /** The policy counts a tracker of its own (marked apart from the module's trackers). */
  readonly own: boolean;
}

/** A route as the console knows it: its label, and its policies' keys as first seen. */
export interface KnownRoute {
  readonly route: string;
  readonly keys: readonly KeyTemplate[];
}

// What an encoded part that is a digest looks like (see encodeKeyPart): given back as it is.
const DIGEST = /^#[A-Za-z0-9_-]{43}$/;

/**
 * The routes this instance has decided on, with where each policy keeps a tracker's state, so
 * that the console can look a tracker up, reset or block it on every route it knows. A route is
 * noted on its first decision; its policies are those of that decision.
 */
export class RouteDirectory {
  private readonly routes = new Map<string, KnownRoute>();
  /** The policies of the routes noted here, by id. */
  private readonly policies = new Map<string, ResolvedPolicy>();

  constructor(private readonly maxRoutes = 1000) {}

  has(route: string): boolean {
    return this.routes.has(route);
  }

  /** Notes `route` with the keys of `limits`; undefined past the bound, noting nothing. */
  note(
    route: string,
    limits: Limits,
    own: ReadonlyArray<unknown> | undefined,
  ): KnownRoute | undefined {
    if (this.routes.size >= this.maxRoutes) return undefined;
    const keys: KeyTemplate[] = [];
    limits.policies.forEach((policy, i) => {
      const key = limits.keys[i];
      const span = RouteKeys.trackerSpan(key, policy, i);
      if (span === undefined) return;
      const [start, end] = span;
      this.policies.set(policy.id, policy);
      keys.push({
        index: i,
        policyName: policy.name,
        policyId: policy.id,
        before: key.slice(0, start),
        after: key.slice(end),
        own: own?.[i] !== undefined,
      });
    });
    const known = { route, keys };
    this.routes.set(route, known);
    return known;
  }

  known(): KnownRoute[] {
    return [...this.routes.values()];
  }

  /** A policy of a route noted here. */
  policy(id: string): ResolvedPolicy | undefined {
    return this.policies.get(id);
  }

  /** The key `template` gives `tracker`, a tracker as {@link trackerOf} shows it. */
  static keyFor(template: KeyTemplate, tracker: string): string {
    const part = DIGEST.test(tracker)
      ? tracker
      : template.own
        ? policyTrackerPart(tracker, 'console')!
        : encodeKeyPart(tracker);
    return template.before + part + template.after;
  }

  /**
   * The tracker a route key counts, as people read it: the value it was encoded from (without a
   * policy tracker's mark), or the part itself where no value can be had back (a digest).
   */
  static trackerOf(key: string, policy: ResolvedPolicy, index: number): string | undefined {
    const span = RouteKeys.trackerSpan(key, policy, index);
    return span === undefined ? undefined : RouteDirectory.shown(key.slice(span[0], span[1]));
  }

  /** Whether `key` has the shape of `template`. */
  static fits({ before, after }: KeyTemplate, key: string): boolean {
    return (
      key.length >= before.length + after.length && key.startsWith(before) && key.endsWith(after)
    );
  }

  /** The tracker `template` found in `key`, when the key has the template's shape. */
  static trackerIn(template: KeyTemplate, key: string): string | undefined {
    if (!RouteDirectory.fits(template, key)) return undefined;
    const { before, after } = template;
    return RouteDirectory.shown(key.slice(before.length, key.length - after.length));
  }

  /** An encoded part as people read it (see {@link trackerOf}). */
  static shown(part: string): string {
    const value = part.includes('%') ? (decodeKeyPart(part) ?? part) : part;
    return value.startsWith(POLICY_TRACKER_MARK) ? value.slice(1) : value;
  }
}
