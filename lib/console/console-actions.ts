import {
  BadRequestException,
  Inject,
  Injectable,
  Logger,
  NotImplementedException,
} from '@nestjs/common';
import { DecisionFeed } from '../activity/decision-feed.js';
import { type KeyTemplate, RouteDirectory } from '../activity/route-directory.js';
import { RateLimitHealthIndicator } from '../health/rate-limit.health.js';
import { MAX_OVERRIDE_TRACKER_LENGTH } from '../overrides/override-bounds.js';
import { OverrideRegistry } from '../overrides/override-registry.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { parseDuration, RateLimitConfigError } from '../policy/validation.js';
import { RATE_LIMIT_CALL_STORE } from '../rate-limit.constants.js';
import { RateLimitService } from '../service/rate-limit.service.js';
import {
  type CallStore,
  type StoreCall,
  type StoreOperation,
} from '../store-contract/store-call.js';
import { ActivitySharing } from './activity-sharing.js';

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

  constructor(
    private readonly sharing: ActivitySharing,
    private readonly feed: DecisionFeed,
    private readonly registry: OverrideRegistry,
    private readonly service: RateLimitService,
    private readonly health: RateLimitHealthIndicator,
    @Inject(RATE_LIMIT_CALL_STORE) private readonly store: CallStore,
  ) {}

  async top(window: unknown = '60') {
    const minutes = WINDOWS.get(String(window));
    if (minutes === undefined) throw badField('window', window, '60, 300 or 900 (seconds)');
    const trackers = await this.sharing.top(minutes, TOP);
    return { window: Number(window), trackers, ...this.reach() };
  }

  async rates() {
    return { ...(await this.sharing.rates()), ...this.reach() };
  }

  async healthOf() {
    return (await this.health.isHealthy('store')).store;
  }

  /** What each policy of every known route has left for `tracker`, and any lock-out. */
  async lookup(tracker: unknown) {
    const value = checkTracker(tracker);
    const policies: object[] = [];
    for (const [route, keys] of await this.byRoute(value)) {
      const limits = this.limitsOf(keys);
      // A cost of 0 fits any quota, so only a lock-out rejects it: what is left, and whether locked.
      const zero = { ...limits, costs: keys.map(() => 0) };
      const decision = await this.execute({ op: 'peek', limits: zero });
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
    return { tracker: value, policies };
  }

  async block(tracker: unknown, body: unknown, actor: string) {
    const value = checkTracker(tracker);
    const fields = bodyOf(body, ['duration', 'policy']);
    const durationMs = badRequestOn(() => parseDuration(fields.duration, 'duration', 'block'));
    if (!(durationMs > 0)) throw badField('duration', fields.duration, 'a positive duration');
    const policy = fields.policy === undefined ? undefined : await this.checkPolicy(fields.policy);
    const done = await this.act('block', value, policy, durationMs);
    const on = policy === undefined ? 'every policy' : `policy "${policy}"`;
    this.logger.log(
      `${actor} blocked tracker ${JSON.stringify(value)} for ${fields.duration} under ${on}`,
    );
    return { tracker: value, blockedForMs: durationMs, policies: done };
  }

  async unblock(tracker: unknown, actor: string) {
    const value = checkTracker(tracker);
    const done = await this.act('reset', value, undefined);
    this.logger.log(`${actor} lifted the blocks of tracker ${JSON.stringify(value)}`);
    return { tracker: value, policies: done };
  }

  async reset(tracker: unknown, actor: string) {
    const value = checkTracker(tracker);
    const done = await this.act('reset', value, undefined);
    this.logger.log(`${actor} reset tracker ${JSON.stringify(value)}`);
    return { tracker: value, policies: done };
  }

  async overrides() {
    return { overrides: await this.service.overrides() };
  }

  async setOverride(policy: string, body: unknown, actor: string) {
    const fields = bodyOf(body, ['threshold', 'period', 'burst', 'tracker', 'ttl']);
    const { threshold, period, burst, tracker, ttl } = fields as Record<string, never>;
    const limit = { threshold, period, burst };
    for (const key of ['period', 'burst'] as const) if (limit[key] === undefined) delete limit[key];
    const options = { tracker, ttl };
    if (tracker === undefined) delete options.tracker;
    if (ttl === undefined) delete options.ttl;
    await badRequestOn(() => this.service.override(policy, limit, options));
    const whom = tracker === undefined ? 'every tracker' : `tracker ${JSON.stringify(tracker)}`;
    this.logger.log(
      `${actor} set the override of policy "${policy}" for ${whom}: ${JSON.stringify(fields)}`,
    );
    return this.overrides();
  }

  async clearOverride(policy: string, tracker: unknown, actor: string) {
    const options = tracker === undefined ? {} : { tracker: checkTracker(tracker) };
    const cleared = await badRequestOn(() =>
      this.service.clearOverride(policy, options as { tracker?: string }),
    );
    const whom = tracker === undefined ? 'every tracker' : `tracker ${JSON.stringify(tracker)}`;
    this.logger.log(`${actor} cleared the override of policy "${policy}" for ${whom}`);
    return { cleared, ...(await this.overrides()) };
  }

  /** Blocks or resets `tracker` under every known route's policies, or those named `policy`. */
  private async act(op: StoreOperation, tracker: string, policy?: string, durationMs?: number) {
    const done: { route: string; policy: string }[] = [];
    for (const [route, all] of await this.byRoute(tracker)) {
      const keys = all.filter((k) => policy === undefined || k.policy.name === policy);
      if (keys.length === 0) continue;
      await this.execute({ op, limits: this.limitsOf(keys), durationMs });
      for (const k of keys) done.push({ route, policy: k.policy.name });
    }
    return done;
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
  private async checkPolicy(name: unknown): Promise<string> {
    const names = new Set(
      (await this.sharing.routes()).flatMap((r) => r.keys.map((k) => k.policyName)),
    );
    if (typeof name === 'string' && names.has(name)) return name;
    const known = [...names].sort().join(', ') || 'none yet';
    throw badField('policy', name, `the name of a policy of a known route (known: ${known})`);
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

  /** Whether the figures are every instance's, or this one's alone (the store could not be read). */
  private reach() {
    const error = this.sharing.readError;
    return error === undefined ? { instances: 'all' } : { instances: 'this one', reason: error };
  }
}

function checkTracker(tracker: unknown): string {
  if (typeof tracker !== 'string' || tracker.length === 0) {
    throw badField('tracker', tracker, 'a non-empty string');
  }
  if (tracker.length > MAX_OVERRIDE_TRACKER_LENGTH) {
    const expected = `at most ${MAX_OVERRIDE_TRACKER_LENGTH} characters`;
    throw badField('tracker', `${tracker.length} characters`, expected);
  }
  return tracker;
}

/** A JSON object body with only `fields`, else 400 naming the first that is not. */
function bodyOf(body: unknown, fields: readonly string[]): Record<string, unknown> {
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw badField('body', body, `a JSON object with ${fields.join(', ')}`);
  }
  for (const field of Object.keys(body)) {
    if (!fields.includes(field))
      throw badField(
        field,
        (body as Record<string, unknown>)[field],
        `one of ${fields.join(', ')}`,
      );
  }
  return body as Record<string, unknown>;
}

function badField(field: string, value: unknown, expected: string): BadRequestException {
  const shown =
    typeof value === 'string' ? JSON.stringify(value) : String(JSON.stringify(value) ?? value);
  return new BadRequestException({
    statusCode: 400,
    error: 'Bad Request',
    field,
    message: `${field} must be ${expected}, got ${shown}`,
  });
}

/** Runs `fn`, answering a configuration error it throws (a bad field) with 400 naming the field. */
function badRequestOn<T>(fn: () => T): T {
  const asBadRequest = (error: unknown): never => {
    if (!(error instanceof RateLimitConfigError)) throw error;
    const named = /^[^:]*: (?:unknown field "([^"]+)"|([A-Za-z]+) must)/.exec(error.message);
    const name = named?.[1] ?? named?.[2] ?? 'body';
    const field = name === 'policyName' ? 'policy' : name;
    throw new BadRequestException({
      statusCode: 400,
      error: 'Bad Request',
      field,
      message: error.message,
    });
  };
  try {
    const result = fn();
    return (result instanceof Promise ? result.catch(asBadRequest) : result) as T;
  } catch (error) {
    return asBadRequest(error);
  }
}
