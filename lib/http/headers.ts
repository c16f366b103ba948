import { type ResolvedPolicy } from '../rate-limit.policy.js';
import { type RateLimitDecision } from '../stores/store.interface.js';
import { type HttpResponseLike, setHeader } from './request.js';

/** Which rate-limit headers responses carry. */
export type HeaderMode = 'ietf' | 'legacy' | 'both' | 'none';
export const HEADER_MODES: readonly HeaderMode[] = ['ietf', 'legacy', 'both', 'none'];

const seconds = (ms: number) => Math.ceil(ms / 1000);

/**
 * `RateLimit-Policy` value (IETF draft-ietf-httpapi-ratelimit-headers-11), built once per policy:
 * `"2-per-30s";q=2;w=30`.
 */
export function policyHeader(policy: ResolvedPolicy): string {
  return `"${policy.name}";q=${policy.threshold};w=${seconds(policy.periodMs)}`;
}

/** `Retry-After` in whole seconds, rounded up and never 0, so clients do not retry too early. */
export function retryAfterSeconds(retryAfterMs: number): string {
  return String(Math.max(1, seconds(retryAfterMs)));
}

/** Writes the configured headers for one decision. */
export function writeRateLimitHeaders(
  res: HttpResponseLike,
  mode: HeaderMode,
  policy: ResolvedPolicy,
  policyValue: string,
  decision: RateLimitDecision,
): void {
  if (mode === 'ietf' || mode === 'both') {
    setHeader(res, 'RateLimit-Policy', policyValue);
    setHeader(
      res,
      'RateLimit',
      `"${policy.name}";r=${decision.remaining};t=${seconds(decision.resetAfterMs)}`,
    );
  }
  if (mode === 'legacy' || mode === 'both') {
    setHeader(res, 'X-RateLimit-Limit', String(decision.limit));
    setHeader(res, 'X-RateLimit-Remaining', String(decision.remaining));
    setHeader(res, 'X-RateLimit-Reset', String(seconds(decision.resetAfterMs)));
  }
  // Retry-After is plain HTTP, not one of the optional rate-limit fields: always sent on 429.
  if (!decision.allowed) {
    setHeader(res, 'Retry-After', retryAfterSeconds(decision.retryAfterMs));
  }
}
