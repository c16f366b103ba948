import { Logger } from '@nestjs/common';
import {
  CalendarPolicyHeader,
  followsCalendar,
  type HeaderMode,
  policyHeader,
} from '../transports/http-headers.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { COST_TOO_HIGH_MESSAGE, STORE_UNAVAILABLE_MESSAGE } from '../rate-limit.exception.js';
import { arrivalOf } from '../stores/decision.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { type Rejection } from '../transports/transport.js';
import { type DecisionHooks } from './decision-hooks.js';
import { type RouteCall } from './route-plan.js';

/** The last step of a call: the hooks are told, the client is told, the call goes on or not. */
export class RouteAnswer {
  private readonly logger = new Logger('RateLimit');
  /** Headers of the frozen policy lists an override registry keeps until its next change. */
  private readonly headersOf = new WeakMap<
    readonly ResolvedPolicy[],
    string | CalendarPolicyHeader
  >();

  constructor(
    private readonly hooks: DecisionHooks,
    private readonly headers: HeaderMode,
    private readonly errorMessage: string,
  ) {}

  /**
   * Tells the hooks and the client, and lets the call through or turns it away. The hooks see
   * `decision`; the client sees `shown`, the enforced policies' own decision when some are in
   * shadow mode, so that a shadow policy never shows in headers or `Retry-After`.
   */
  answer(
    call: RouteCall,
    policies: readonly ResolvedPolicy[],
    decision: RateLimitDecision,
    shown: RateLimitDecision = decision,
  ): Promise<boolean> | boolean {
    if (this.hooks.onDecision !== undefined) this.hooks.decided(call.context, decision);

    if (shown.degraded === 'allow') return true;
    if (shown.degraded === 'deny') {
      const rejection = { reason: 'unavailable', message: STORE_UNAVAILABLE_MESSAGE } as const;
      return this.turnAway(call, { ...rejection, decision: shown }, decision);
    }
    const { context, transport, plan } = call;
    // The plan's own header only for the plan's own policies: an override changes the values.
    const own = policies === plan.policies ? plan.policyHeader : undefined;
    const header = typeof own === 'string' ? own : this.headerOf(policies, own, shown);
    transport.report(context, this.headers, header, shown);
    if (shown.allowed) return true;
    const never = shown.retryAfterMs === Infinity;
    const message = never ? COST_TOO_HIGH_MESSAGE : this.errorMessage;
    return this.turnAway(call, { reason: 'limited', message, decision: shown }, decision);
  }

  /**
   * The header of policies other than the plan's fixed ones, or of fixed ones that follow the
   * calendar (`own`): those give the length of the window `decision` was made in.
   */
  private headerOf(
    policies: readonly ResolvedPolicy[],
    own: CalendarPolicyHeader | undefined,
    decision: RateLimitDecision,
  ): string {
    if (own !== undefined) return own.at(arrivalOf(decision));
    if (!Object.isFrozen(policies)) return policyHeader(policies, arrivalOf(decision));
    let header = this.headersOf.get(policies);
    if (header === undefined) {
      header = followsCalendar(policies)
        ? new CalendarPolicyHeader(policies)
        : policyHeader(policies);
      this.headersOf.set(policies, header);
    }
    return typeof header === 'string' ? header : header.at(arrivalOf(decision));
  }

  /** A call only shadow policies would have turned away: logged, and `onLimited` hears of it. */
  shadowLimited(call: RouteCall, decision: RateLimitDecision): void {
    const { context, transport, plan } = call;
    const route = transport.route(context, plan.route, plan.place);
    this.logger.debug(`A shadow policy would have rejected a request to ${route}`);
    if (this.hooks.onLimited !== undefined) this.hooks.limited(context, decision);
  }

  /** Every policy is in shadow mode: the call goes on, and `onDecision` sees it. */
  passedUnenforced(call: RouteCall, decision: RateLimitDecision): true {
    if (this.hooks.onDecision !== undefined) this.hooks.decided(call.context, decision);
    return true;
  }

  /** `told` is what `onLimited` sees: the same decision `onDecision` saw. */
  private async turnAway(
    { context, transport }: RouteCall,
    rejection: Rejection,
    told: RateLimitDecision,
  ): Promise<never> {
    if (this.hooks.onLimited !== undefined) this.hooks.limited(context, told);
    throw await transport.reject(context, rejection);
  }
}
