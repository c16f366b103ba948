import { algorithmOf } from '../algorithms/registry.js';
import { type LeaseKeeper } from '../flow/lease-keeper.js';
import { checkUsage, settleUsage } from '../flow/usage.js';
import { type RateLimitPolicy } from '../policy/rate-limit.policy.js';
import { configError } from '../policy/validation.js';
import {
  type CallStore,
  type Limits,
  type StoreCall,
  type StoreOperation,
} from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';
import { admit, permitOf, type RateLimitPermit } from './permit.js';
import { type RateLimitReservation, reservationOf } from './reservation.js';
import { type ServiceLimits } from './service-limits.js';
import {
  type AcquireOptions,
  checkCallOptions,
  type ConsumeOptions,
  type ReserveOptions,
  type RunOptions,
} from './service-options.js';

type Policies = RateLimitPolicy | readonly RateLimitPolicy[];

// Built once: the hot path must not assemble the place name of an error it rarely throws.
const WHERE: Readonly<Record<StoreOperation, string>> = {
  consume: 'RateLimitService.consume',
  peek: 'RateLimitService.peek',
  refund: 'RateLimitService.refund',
  reset: 'RateLimitService.reset',
  block: 'RateLimitService.block',
  reserve: 'RateLimitService.acquire',
  release: 'RateLimitService.acquire',
  renew: 'RateLimitService.acquire',
  settle: 'RateLimitService.reserve',
};

/** How `RateLimitService` carries out its calls, once their arguments are checked. */
export class ServiceCalls {
  constructor(
    private readonly store: CallStore,
    private readonly leases: LeaseKeeper,
    private readonly limits: ServiceLimits,
    private readonly telemetry: RateLimitTelemetry,
  ) {}

  /** One store call: consume, peek, refund, reset or block. */
  operate(
    op: StoreOperation,
    key: string,
    policy: Policies,
    options: ConsumeOptions | undefined,
    extras?: Omit<StoreCall, 'op' | 'limits'>,
  ): Promise<RateLimitDecision> {
    const where = WHERE[op];
    checkCallOptions(options, 'consume', where);
    const limits = this.limits.of(where, key, policy, options, op !== 'consume');
    const decided = this.store.execute({ ...extras, op, limits });
    // Only consume decides: peek records nothing; refund, reset and block are no requests.
    return op === 'consume' ? this.telemetry.counted(where, decided) : decided;
  }

  async permit(
    where: string,
    key: string,
    policy: Policies,
    options: AcquireOptions | undefined,
    begin?: () => void,
  ): Promise<RateLimitPermit> {
    checkCallOptions(options, 'acquire', where);
    const strict = options?.strict ?? true;
    if (typeof strict !== 'boolean') {
      throw configError(where, 'strict', strict, 'true (the default) or false');
    }
    const limits = this.limits.of(where, key, policy, options, true);
    const { store, leases, telemetry } = this;
    const decision = await admit(store, leases, limits, options, where, telemetry, strict, begin);
    return permitOf(this.leases, limits, decision);
  }

  async run<T>(
    key: string,
    policy: Policies,
    fn: () => T | Promise<T>,
    options: RunOptions<T> | undefined,
  ): Promise<T> {
    const where = 'RateLimitService.run';
    if (typeof fn !== 'function') {
      throw configError(where, 'fn', fn, 'a function to run once allowed');
    }
    checkCallOptions(options, 'run', where);
    if (options?.usage !== undefined) return this.runReserved(key, policy, fn, options);
    // Started the moment the last check lets it, not a turn later (see SlotWait.begin).
    let running: Promise<T> | undefined;
    const permit = await this.permit(where, key, policy, options, () => (running = start(fn)));
    try {
      return await (running ?? start(fn));
    } finally {
      await permit.release();
    }
  }

  async reserve(
    key: string,
    policy: Policies,
    estimate: number,
    options: ReserveOptions | undefined,
  ): Promise<RateLimitReservation> {
    const where = 'RateLimitService.reserve';
    checkCallOptions(options, 'reserve', where);
    const cost = checkUsage(estimate, 'estimate', where);
    const limits = this.reservable(where, key, policy, cost);
    const waits = { ...options, maxWait: options?.maxWait ?? 0 };
    const decision = await admit(this.store, this.leases, limits, waits, where, this.telemetry);
    return reservationOf(this.store, limits, decision, cost, where);
  }

  /** `run` with `usage`: a reservation of the call's cost, settled with what its result used. */
  private async runReserved<T>(
    key: string,
    policy: Policies,
    fn: () => T | Promise<T>,
    options: RunOptions<T>,
  ): Promise<T> {
    const where = 'RateLimitService.run';
    const { usage } = options;
    if (typeof usage !== 'function') {
      throw configError(where, 'usage', usage, 'a function of the result giving what it used');
    }
    if (options.strict !== undefined) {
      throw configError(where, 'strict', options.strict, 'omitted with usage: its cost is no call');
    }
    const limits = this.reservable(where, key, policy, options.cost);
    const decision = await admit(this.store, this.leases, limits, options, where, this.telemetry);
    const result = await fn();
    await settleUsage(this.store, limits, decision, checkUsage(usage(result), 'usage', where));
    return result;
  }

  /** The limits of a reservation: rate policies only, on a store that can settle. */
  private reservable(where: string, key: string, policy: Policies, cost?: number): Limits {
    const options = cost === undefined ? undefined : { cost };
    const limits = this.limits.of(where, key, policy, options, true);
    const leases = limits.policies.find((p) => algorithmOf(p.algorithm).holdsLeases);
    if (leases !== undefined) {
      throw configError(
        where,
        'algorithm',
        leases.algorithm,
        'a rate algorithm: a reservation settles usage, not calls at once',
      );
    }
    if (!this.store.supports('settle')) {
      const name = this.store.kind;
      throw configError(where, 'store', name, 'a store with a settle() method');
    }
    return limits;
  }
}

/** `fn()` as a promise, rejected when `fn` throws. */
function start<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error as Error);
  }
}
