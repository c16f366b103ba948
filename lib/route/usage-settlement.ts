import { type ExecutionContext } from '@nestjs/common';
import { checkUsage, settleUsage } from '../flow/usage.js';
import { type CallStore } from '../store-contract/store-call.js';
import { type DecisionPart } from './route-decision.js';
import { type RouteFeatures } from './route-plan.js';
import { isPromise } from '../templates/policy-template.js';

/**
 * Charges what a request really used in place of its cost, for route policies with `settle`,
 * once the request has succeeded: one store call per decision part whose policies settle, with
 * the signed difference per policy. The response has gone by then, so a `settle` that throws or
 * returns something other than an integer from 0 is reported through `warn` and leaves the
 * estimate counted, as does a store that fails.
 */
export class UsageSettlement {
  constructor(private readonly warn: (message: string) => void) {}

  settle(
    context: ExecutionContext,
    result: unknown,
    features: RouteFeatures,
    store: CallStore,
    parts: readonly DecisionPart[],
    where: string,
  ): void {
    for (const part of parts) {
      const decision = part.decision!;
      if (!decision.allowed) continue;
      const used = part.indexes.map((i) => this.usage(features.settles[i], context, result, where));
      if (used.every((u) => u === undefined)) continue;
      void Promise.all(used)
        .then((actuals) => settleUsage(store, part, decision, actuals))
        .catch((error: unknown) =>
          this.warn(`Settling what a request used failed: ${String(error)}`),
        );
    }
  }

  /** What `settle` says the request used, checked; undefined to keep the estimate. */
  private usage(
    settle: RouteFeatures['settles'][number],
    context: ExecutionContext,
    result: unknown,
    where: string,
  ): number | undefined | Promise<number | undefined> {
    if (settle === undefined) return undefined;
    const check = (value: unknown) =>
      value === undefined ? undefined : checkUsage(value, 'settle', where);
    try {
      const value: unknown = settle(context, result);
      return isPromise(value)
        ? value.then(check, (error: unknown) => this.failed(error))
        : check(value);
    } catch (error) {
      return this.failed(error);
    }
  }

  private failed(error: unknown): undefined {
    this.warn(`A settle function failed; the estimate stays counted: ${String(error)}`);
    return undefined;
  }
}
