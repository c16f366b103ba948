import { Inject, Injectable, Logger, NotImplementedException } from '@nestjs/common';
import { DecisionFeed } from '../activity/decision-feed.js';
import { type KeyTemplate, RouteDirectory } from '../activity/route-directory.js';
import { RateLimitHealthIndicator } from '../health/rate-limit.health.js';
import { OverrideRegistry } from '../overrides/override-registry.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { parseDuration } from '../policy/validation.js';
import { RATE_LIMIT_CALL_STORE } from '../rate-limit.constants.js';
import { RateLimitService } from '../service/rate-limit.service.js';
import {
  type CallStore,
  type StoreCall,
  type StoreOperation,
} from '../store-contract/store-call.js';
import { ActivitySharing } from './activity-sharing.js';
import {
  badField,
  badRequestOn,
  bodyOf,
  checkTracker,
  storeCall,
  unavailable,
} from './console-input.js';
import { CONSOLE_OPTIONS, type ResolvedConsoleOptions } from './console-options.js';

/**
 * The windows the top list is asked for, in seconds, and the minute summaries each merges: whole
 * minutes, the current one and as many before as the window is long, so that the window holds
 * at least its length (up to a minute more).
 */
const WINDOWS: ReadonlyMap<string, number> = new Map([
  ['60', 2],
  ['300', 6],
  ['900', 16],
]);
const TOP = 20;
/** Why an action or a lookup reached this instance alone while the store failed. */
const DEGRADED = 'the store did not answer, and its fallback on this instance answered instead';

/** A policy of a route, with the key it keeps the tracker's state in. */
interface PolicyKey {
  readonly route: string;
  readonly policy: ResolvedPolicy;
  readonly key: string;
}

/**
 * What the console's API does, apart from HTTP: reads of what every instance decided, and the
 * actions on a tracker or an override, each logged with who took it. Input is checked here, and a
 * bad value answered with 400 naming the field.
 */
@Injectable()
export class ConsoleActions {
  private readonly logger = new Logger('RateLimitConsole');
  /** Each API route as its messages name it, e.g. `POST /rate-limits/api/trackers/:tracker/block`. */
  private readonly routes: Record<
    | 'top'
    | 'lookup'
    | 'block'
    | 'unblock'
    | 'reset'
    | 'overrides'
    | 'setOverride'
    | 'clearOverride',
    string
  >;

  constructor(
    @Inject(CONSOLE_OPTIONS) { path }: ResolvedConsoleOptions,
    private readonly sharing: ActivitySharing,
    private readonly feed: DecisionFeed,
    private readonly registry: OverrideRegistry,
    private readonly service: RateLimitService,
    private readonly health: RateLimitHealthIndicator,
    @Inject(RATE_LIMIT_CALL_STORE) private readonly store: CallStore,
  ) {
    const tracker = `${path}/api/trackers/:tracker`;
    this.routes = {
      top: `GET ${path}/api/top`,
      lookup: `GET ${tracker}`,
      block: `POST ${tracker}/block`,
      unblock: `DELETE ${tracker}/block`,
      reset: `POST ${tracker}/reset`,
      overrides: `GET ${path}/api/overrides`,
      setOverride: `PUT ${path}/api/overrides/:policy`,
      clearOverride: `DELETE ${path}/api/overrides/:policy`,
    };
  }

  async top(window: unknown = '60') {
    const minutes = WINDOWS.get(String(window));
    if (minutes === undefined) {
      throw badField(this.routes.top, 'window', window, '60, 300 or 900 (seconds)');
    }
    const trackers = await this.sharing.top(minutes, TOP);
    return { window: Number(window), trackers, ...this.sharing.reach() };
  }

  async rates() {
    return { ...(await this.sharing.rates()), ...this.sharing.reach() };
  }

  async healthOf() {
    return (await this.health.isHealthy('store')).store;
  }

  /** What each policy of every known route has left for `tracker`, and any lock-out. */
  async lookup(tracker: unknown) {
    const value = checkTracker(this.routes.lookup, tracker);
    const policies: object[] = [];
    let degraded = false;
    for (const [route, keys] of await this.byRoute(value)) {
      const limits = this.limitsOf(keys);
      // A cost of 0 fits any quota, so only a lock-out rejects it: what is left, and whether locked.
      const zero = { ...limits, costs: keys.map(() => 0) };
      const decision = await this.execute({ op: 'peek', limits: zero });
      degraded ||= decision.degraded !== undefined;
      keys.forEach(({ policy }, i) => {
        const own = decision.policies[i];
        policies.push({
          route,
          policy: policy.name,
          algorithm: policy.algorithm,
          limit: own.limit,
          remaining: own.remaining,
          resetAfterMs: own.resetAfterMs,
          blockedForMs: own.allowed ? 0 : own.retryAfterMs,
          ...(decision.degraded === undefined ? {} : { degraded: decision.degraded }),
        });
      });
    }
    return { tracker: value, policies, ...this.reach(degraded) };
  }

  async block(tracker: unknown, body: unknown, actor: string) {
    const where = this.routes.block;
    const value = checkTracker(where, tracker);
    const fields = bodyOf(where, body, ['duration', 'policy']);
    const durationMs = badRequestOn(() => parseDuration(fields.duration, 'duration', where));
    if (!(durationMs > 0)) {
      throw badField(where, 'duration', fields.duration, 'a positive duration');
    }
    const policy =
      fields.policy === undefined ? undefined : await this.checkPolicy(where, fields.policy);
    const done = await this.act(where, 'block', value, policy, durationMs);
    const on = policy === undefined ? 'every policy' : `policy "${policy}"`;
    this.logger.log(
      `${actor} blocked tracker ${JSON.stringify(value)} for ${fields.duration} under ${on}${done.alone}`,
    );
    return { tracker: value, blockedForMs: durationMs, ...done.answer };
  }

  async unblock(tracker: unknown, actor: string) {
    const value = checkTracker(this.routes.unblock, tracker);
    const done = await this.act(this.routes.unblock, 'reset', value);
    this.logger.log(`${actor} lifted the blocks of tracker ${JSON.stringify(value)}${done.alone}`);
    return { tracker: value, ...done.answer };
  }

  async reset(tracker: unknown, actor: string) {
    const value = checkTracker(this.routes.reset, tracker);
    const done = await this.act(this.routes.reset, 'reset', value);
    this.logger.log(`${actor} reset tracker ${JSON.stringify(value)}${done.alone}`);
    return { tracker: value, ...done.answer };
  }

  async overrides() {
    const read = () => this.service.overrides();
    return { overrides: await storeCall(this.routes.overrides, 'nothing was read', read) };
  }

  async setOverride(policy: string, body: unknown, actor: string) {
    const where = this.routes.setOverride;
    const fields = bodyOf(where, body, ['threshold', 'period', 'burst', 'tracker', 'ttl']);
    const { threshold, period, burst, tracker, ttl } = fields as Record<string, never>;
    const limit = { threshold, period, burst };
    for (const key of ['period', 'burst'] as const) if (limit[key] === undefined) delete limit[key];
    const options = { tracker, ttl };
    if (tracker === undefined) delete options.tracker;
    if (ttl === undefined) delete options.ttl;
    const set = () => this.service.override(policy, limit, options);
    await storeCall(where, 'the override was not set', set);
    const whom = tracker === undefined ? 'every tracker' : `tracker ${JSON.stringify(tracker)}`;
    this.logger.log(
      `${actor} set the override of policy "${policy}" for ${whom}: ${JSON.stringify(fields)}`,
    );
    return this.overrides();
  }

  async clearOverride(policy: string, tracker: unknown, actor: string) {
    const where = this.routes.clearOverride;
    const options = tracker === undefined ? {} : { tracker: checkTracker(where, tracker) };
    const clear = () => this.service.clearOverride(policy, options as { tracker?: string });
    const cleared = await storeCall(where, 'the override was not cleared', clear);
    const whom = tracker === undefined ? 'every tracker' : `tracker ${JSON.stringify(tracker)}`;
    this.logger.log(`${actor} cleared the override of policy "${policy}" for ${whom}`);
    return { cleared, ...(await this.overrides()) };
  }

  /**
   * Blocks or resets `tracker` under every known route's policies, or those named `policy`. While
   * the store fails, what its fallback did is said to be this instance's alone; with no route to
   * act on because the other instances' could not be read, 503: nothing was done.
   */
  private async act(
    where: string,
    op: StoreOperation,
    tracker: string,
    policy?: string,
    durationMs?: number,
  ) {
    const policies: { route: string; policy: string }[] = [];
    let degraded = false;
    for (const [route, all] of await this.byRoute(tracker)) {
      const keys = all.filter((k) => policy === undefined || k.policy.name === policy);
      if (keys.length === 0) continue;
      const decision = await this.execute({ op, limits: this.limitsOf(keys), durationMs });
      degraded ||= decision.degraded !== undefined;
      for (const k of keys) policies.push({ route, policy: k.policy.name });
    }
    const unread = this.sharing.readFailure;
    if (policies.length === 0 && unread !== undefined) {
      const why = `this instance knows no route to act on, and the others' could not be read (${unread})`;
      throw unavailable(where, `${why}: nothing was done`);
    }
    const failure = degraded ? DEGRADED : unread;
    const alone = failure === undefined ? '' : `, on this instance alone (${failure})`;
    return { answer: { policies, ...this.reach(degraded) }, alone };
  }

  /**
   * Whom an action or a lookup reached: every instance, or this one alone when the store did not
   * answer (`degraded`: its fallback did) or the other instances' routes could not be read.
   */
  private reach(degraded: boolean) {
    return degraded ? { instances: 'this one' as const, reason: DEGRADED } : this.sharing.reach();
  }

  /** The store's answer to `call`; 501 naming the method when a custom store has none for it. */
  private execute(call: StoreCall) {
    if (!this.store.supports(call.op)) {
      throw new NotImplementedException(
        `The store (${this.store.kind}) has no ${call.op}() method, which this action needs`,
      );
    }
    return this.store.execute(call);
  }

  /** A name some known route's policy has, else 400 listing them. */
  private async checkPolicy(where: string, name: unknown): Promise<string> {
    const names = new Set(
      (await this.sharing.routes()).flatMap((r) => r.keys.map((k) => k.policyName)),
    );
    if (typeof name === 'string' && names.has(name)) return name;
    const known = [...names].sort().join(', ') || 'none yet';
    const expected = `the name of a policy of a known route (known: ${known})`;
    throw badField(where, 'policy', name, expected);
  }

  /** The keys of `tracker` under the policies of every route some instance knows, by route. */
  private async byRoute(tracker: string): Promise<Map<string, PolicyKey[]>> {
    const byRoute = new Map<string, PolicyKey[]>();
    for (const { route, keys } of await this.sharing.routes()) {
      const found: PolicyKey[] = [];
      for (const template of keys) {
        const policy = this.policyOf(template);
        if (policy !== undefined)
          found.push({ route, policy, key: RouteDirectory.keyFor(template, tracker) });
      }
      if (found.length > 0) byRoute.set(route, found);
    }
    return byRoute;
  }

  /** The policy of a key this instance can act on: one of its routes', or one it knows by name. */
  private policyOf({ policyId, policyName }: KeyTemplate): ResolvedPolicy | undefined {
    const known = this.feed.directory.policy(policyId);
    if (known !== undefined) return known;
    return this.registry.known.get(policyName)?.find((p) => p.fixed?.id === policyId)?.fixed;
  }

  private limitsOf(keys: readonly PolicyKey[]) {
    return {
      keys: keys.map((k) => k.key),
      policies: keys.map((k) => k.policy),
      costs: keys.map(() => 1),
    };
  }
}
