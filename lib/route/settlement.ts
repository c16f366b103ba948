import { Logger } from '@nestjs/common';
import { type HeldLease, type LeaseKeeper } from '../flow/lease-keeper.js';
import { type CallStore } from '../store-contract/store-call.js';
import { type PendingOutcomes } from '../transports/pending-outcomes.js';
import { type CountMode } from '../templates/route-policy.js';
import { type DecisionPart } from './route-decision.js';
import { type RouteCall, type RouteFeatures } from './route-plan.js';
import { UsageSettlement } from './usage-settlement.js';

// Enough to see that refunds or settles fail, without a log line per request while a store is down.
const MAX_REPORTED_FAILURES = 5;

/**
 * The end of a call on a route that holds leases, counts only some outcomes or settles usage. The
 * leases the decision took are held until the call ends; once its outcome is known, they are
 * freed, the policies that do not count that outcome get back what they counted (`'failures'`
 * policies on success, `'successes'` policies on failure), and on success the policies with
 * `settle` are charged what the call used. The outcome comes through the call's transport.
 */
export class Settlement {
  private readonly logger = new Logger('RateLimit');
  private failures = 0;
  private readonly usage = new UsageSettlement((message) => this.warn(message));

  constructor(
    private readonly leases: LeaseKeeper,
    private readonly pending: PendingOutcomes,
  ) {}

  /**
   * Only parts the store allowed counted anything. A call turned away frees its leases at once. A
   * refund or settle that fails is logged (the first few), never thrown.
   */
  settle(
    { context, transport, plan }: RouteCall,
    features: RouteFeatures,
    store: CallStore,
    parts: readonly DecisionPart[],
    admitted: boolean,
  ): void {
    const where = plan.where;
    let held: HeldLease[] | undefined;
    let unclaimed = () => false;
    if (features.anyLease) {
      for (const part of parts) {
        if (!part.decision!.allowed) continue;
        const lease = this.leases.hold(part, part.decision!, () => unclaimed());
        if (lease === undefined) continue;
        if (admitted) (held ??= []).push(lease);
        else void this.leases.release(lease);
      }
    }
    const settles = features.anySettle && admitted;
    if (!features.anyCount && held === undefined && !settles) return;
    if (settles) this.pending.keepResult(context);
    unclaimed = transport.watchOutcome(
      context,
      (succeeded) => {
        if (held !== undefined) for (const lease of held) void this.leases.release(lease);
        if (features.anyCount) this.giveBack(features, store, parts, succeeded);
        if (!settles) return;
        const result = this.pending.takeResult(context);
        if (succeeded) this.usage.settle(context, result, features, store, parts, where);
      },
      this.pending,
    );
  }

  private giveBack(
    features: RouteFeatures,
    store: CallStore,
    parts: readonly DecisionPart[],
    succeeded: boolean,
  ): void {
    for (const part of parts) {
      const decision = part.decision!;
      if (!decision.allowed) continue;
      // The whole key set, as counted (the block cache knows it by that set); a policy that
      // counts this outcome gets 0 back.
      const costs = part.indexes.map((i, j) =>
        givesBack(features.counts[i], succeeded) ? part.costs[j] : 0,
      );
      // A request whose outcome was waited for leaves its policies' ledgers even when it counts:
      // the refund is sent for that alone then.
      const { ledgers } = part;
      if (costs.every((c) => c === 0) && ledgers === undefined) continue;
      store
        .execute({
          op: 'refund',
          limits: { keys: part.keys, policies: part.policies, costs, ledgers },
          of: decision,
          counted: part.costs,
        })
        .then(
          // Callers waiting here for this outcome ask again at once; elsewhere, when they poll.
          () => ledgers !== undefined && this.leases.roomMade(part.keys),
          (error: unknown) => {
            this.warn(`Giving back a request that does not count failed: ${String(error)}`);
          },
        );
    }
  }

  private warn(message: string): void {
    if (this.failures++ < MAX_REPORTED_FAILURES) this.logger.warn(message);
  }
}

function givesBack(mode: CountMode, succeeded: boolean): boolean {
  return mode === 'failures' ? succeeded : mode === 'successes' ? !succeeded : false;
}
