import { algorithmOf } from '../algorithms/registry.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type PolicyDecision, type RateLimitDecision } from '../store-contract/store.interface.js';
import { type HttpResponseLike, setHeader } from './http-request.js';
import { waitSeconds } from '../rate-limit.exception.js';

/** Which rate-limit headers responses carry. */
export type HeaderMode = 'ietf' | 'legacy' | 'both' | 'none';
export const HEADER_MODES: readonly HeaderMode[] = ['ietf', 'legacy', 'both', 'none'];

const seconds = (ms: number) => Math.ceil(ms / 1000);

/**
 * Whether a policy limits calls at once rather than a rate: it has no window and no reset, its
 * period being a lease's time to live, so the headers leave `w` and `t` out, as the draft allows.
 */
const holdsLeases = (policy: ResolvedPolicy) => algorithmOf(policy.algorithm).holdsLeases;

/**
 * `RateLimit-Policy` value (IETF draft-ietf-httpapi-ratelimit-headers-11), built once per route
 * when its policies are fixed: `"5-per-1s";q=5;w=1, "1000-per-1h";q=1000;w=3600`; a concurrency
 * policy counts calls at once (draft 11's quota unit) and has no window: `"4-at-once";q=4;qu="concurrent-requests"`.
 * A policy that follows the calendar says the length of the window that holds `nowUs` (the store's
 * time of the decision, else this machine's now): `w=82800` on a day of 23 hours.
 */
export function policyHeader(
  policies: readonly ResolvedPolicy[],
  nowUs: number = Date.now() * 1000,
): string {
  return policies.map((p) => policyItem(p, p.calendar?.bounds(nowUs))).join(', ');
}

/** One policy's item; `bounds`, for a calendar policy, those of the window it is in. */
function policyItem(p: ResolvedPolicy, bounds: readonly number[] | undefined): string {
  if (holdsLeases(p)) return `"${p.name}";q=${p.threshold};qu="concurrent-requests"`;
  const windowMs = bounds === undefined ? p.periodMs : (bounds[3] - bounds[2]) / 1000;
  return `"${p.name}";q=${p.threshold};w=${seconds(windowMs)}`;
}

/** Whether some of `policies` follow the calendar, so that their header changes with the window. */
export function followsCalendar(policies: readonly ResolvedPolicy[]): boolean {
  return policies.some((p) => p.calendar !== undefined);
}

/**
 * `RateLimit-Policy` of a fixed list of policies of which some follow the calendar: built again
 * only when one of them enters another window, which `CalendarWindow.bounds` tells by returning
 * another array. The other routes' header stays a string built once.
 */
export class CalendarPolicyHeader {
  private readonly seen: (readonly number[] | undefined)[];
  private value: string | undefined;

  constructor(private readonly policies: readonly ResolvedPolicy[]) {
    this.seen = new Array<undefined>(policies.length);
  }

  /**
   * The header for a decision the store made at `nowUs`. Undefined for a decision that does not
   * say (one the block cache replays, made in the window its rejection waits out): the header
   * of the windows seen last.
   */
  at(nowUs: number | undefined): string {
    const { policies, seen } = this;
    let value = this.value;
    if (nowUs === undefined) {
      if (value !== undefined) return value;
      nowUs = Date.now() * 1000;
    }
    for (let i = 0; i < policies.length; i++) {
      const bounds = policies[i].calendar?.bounds(nowUs);
      if (bounds !== seen[i]) {
        seen[i] = bounds;
        value = undefined;
      }
    }
    if (value === undefined) {
      value = this.value = policies.map((p, i) => policyItem(p, seen[i])).join(', ');
    }
    return value;
  }
}

/** `RateLimit` item of one policy: `"5-per-1s";r=4;t=1`, or `"4-at-once";r=3` for leases. */
function quotaItem(d: PolicyDecision): string {
  const item = `"${d.policy.name}";r=${d.remaining}`;
  return holdsLeases(d.policy) ? item : `${item};t=${seconds(d.resetAfterMs)}`;
}

/** The policy `limit`, `remaining` and `resetAfterMs` come from: the first with the fewest left. */
function bindingPolicy(decision: RateLimitDecision): PolicyDecision | undefined {
  let binding: PolicyDecision | undefined;
  for (const d of decision.policies) {
    if (binding === undefined || d.remaining < binding.remaining) binding = d;
  }
  return binding;
}

/** `Retry-After`: the wait in whole seconds, as {@link waitSeconds}. */
export function retryAfterSeconds(retryAfterMs: number): string {
  return String(waitSeconds(retryAfterMs));
}

/** Writes the configured headers for one decision. */
export function writeRateLimitHeaders(
  res: HttpResponseLike,
  mode: HeaderMode,
  policyValue: string,
  decision: RateLimitDecision,
): void {
  if (mode === 'ietf' || mode === 'both') {
    setHeader(res, 'RateLimit-Policy', policyValue);
    let value = '';
    for (const d of decision.policies) value += `${value ? ', ' : ''}${quotaItem(d)}`;
    setHeader(res, 'RateLimit', value);
  }
  if (mode === 'legacy' || mode === 'both') {
    setHeader(res, 'X-RateLimit-Limit', String(decision.limit));
    setHeader(res, 'X-RateLimit-Remaining', String(decision.remaining));
    // A concurrency limit is whole again when a call ends, not at a time: no reset to announce.
    const binding = bindingPolicy(decision);
    if (binding === undefined || !holdsLeases(binding.policy)) {
      setHeader(res, 'X-RateLimit-Reset', String(seconds(decision.resetAfterMs)));
    }
  }
  // Retry-After is plain HTTP, not one of the optional rate-limit fields: always sent on 429,
  // except when the request can never pass, where any wait would be a lie. A full concurrency
  // limit promises no wait (a lease may be freed at any moment): it says 1 s, a fair retry.
  if (!decision.allowed && Number.isFinite(decision.retryAfterMs)) {
    setHeader(res, 'Retry-After', retryAfterSeconds(decision.retryAfterMs));
  }
}
