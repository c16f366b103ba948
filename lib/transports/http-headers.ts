import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type RateLimitDecision } from '../stores/store.interface.js';
import { type HttpResponseLike, setHeader } from './http-request.js';

/** Which rate-limit headers responses carry. */
export type HeaderMode = 'ietf' | 'legacy' | 'both' | 'none';
export const HEADER_MODES: readonly HeaderMode[] = ['ietf', 'legacy', 'both', 'none'];

const seconds = (ms: number) => Math.ceil(ms / 1000);

/**
 * `RateLimit-Policy` value (IETF draft-ietf-httpapi-ratelimit-headers-11), built once per route
 * when its policies are fixed: `"5-per-1s";q=5;w=1, "1000-per-1h";q=1000;w=3600`.
 */
export function policyHeader(policies: readonly ResolvedPolicy[]): string {
  return policies.map((p) => `"${p.name}";q=${p.threshold};w=${seconds(p.periodMs)}`).join(', ');
}

/** A wait in whole seconds, rounded up and never 0, so clients do not retry too early. */
export function waitSeconds(retryAfterMs: number): number {
  return Math.max(1, seconds(retryAfterMs));
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
    for (const d of decision.policies) {
      value += `${value ? ', ' : ''}"${d.policy.name}";r=${d.remaining};t=${seconds(d.resetAfterMs)}`;
    }
    setHeader(res, 'RateLimit', value);
  }
  if (mode === 'legacy' || mode === 'both') {
    setHeader(res, 'X-RateLimit-Limit', String(decision.limit));
    setHeader(res, 'X-RateLimit-Remaining', String(decision.remaining));
    setHeader(res, 'X-RateLimit-Reset', String(seconds(decision.resetAfterMs)));
  }
  // Retry-After is plain HTTP, not one of the optional rate-limit fields: always sent on 429,
  // except when the request can never pass, where any wait would be a lie.
  if (!decision.allowed && Number.isFinite(decision.retryAfterMs)) {
    setHeader(res, 'Retry-After', retryAfterSeconds(decision.retryAfterMs));
  }
}
