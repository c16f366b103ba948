import type * as OtelApi from '@opentelemetry/api';
import type { Counter, Histogram, Span, Tracer } from '@opentelemetry/api';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type StoreOperation } from '../store-contract/store-call.js';
import { type PolicyDecision, type RateLimitDecision } from '../store-contract/store.interface.js';
import {
  type DecisionOutcome,
  type RateLimitTelemetry,
  type StoreKind,
  type StoreState,
  type WaitOutcome,
} from './rate-limit-telemetry.js';
import { TelemetryAttributes } from './telemetry-attributes.js';

/** The `@opentelemetry/api` module, loaded at startup if it is installed. */
export type OpenTelemetryApi = typeof OtelApi;

/** The instrumentation scope: the meter's and the tracer's name. */
export const TELEMETRY_SCOPE = 'nest-rate-limit';

// Store replies take from well under a millisecond to the timeout (100 ms by default, at most 60 s).
const STORE_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
// Waits for a slot last up to a route's maxWait or acquire's, often seconds.
const WAIT_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const DECISION_EVENT = 'rate_limit.decision';
const WAIT_SPAN = 'rate_limit.wait';
const STORE_SPAN = 'rate_limit.store';
// SpanKind.CLIENT and SpanStatusCode.ERROR, spelled out: the API's enums are values of a module
// this file must not import at startup.
const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;

/**
 * Records through `@opentelemetry/api`: the instruments on the meter of the global
 * `MeterProvider` (when one is registered before the module starts; otherwise no metric is
 * recorded at all), and what a trace shows on the active span, when there is one that records.
 *
 * Counts are kept on the series objects and reported by asynchronous instruments when the SDK
 * collects: a decision costs an increment, not a synchronous instrument's attribute hashing.
 * Durations are histograms, recorded as they happen.
 */
export class OtelTelemetry implements RateLimitTelemetry {
  readonly enabled = true;
  private readonly metricsOn: boolean;
  private readonly series: TelemetryAttributes;
  private readonly tracer: Tracer;
  private readonly storeDuration: Histogram;
  private readonly waitDuration: Histogram;
  private readonly stateChanges: Counter;

  constructor(
    private readonly api: OpenTelemetryApi,
    store: StoreKind,
    private readonly nearLimitFraction: number,
  ) {
    this.series = new TelemetryAttributes(store);
    const meter = api.metrics.getMeter(TELEMETRY_SCOPE);
    // No SDK registered: skip the instruments, whose calls would do nothing anyway.
    this.metricsOn = meter !== api.createNoopMeter();
    this.tracer = api.trace.getTracer(TELEMETRY_SCOPE);
    const decisions = meter.createObservableCounter('rate_limit.decisions', {
      description: 'Rate-limit decisions, by outcome',
      unit: '{decision}',
    });
    const nearLimit = meter.createObservableCounter('rate_limit.near_limit', {
      description: 'Allowed decisions that left a policy with less than its near-limit fraction',
      unit: '{decision}',
    });
    const leases = meter.createObservableUpDownCounter('rate_limit.leases', {
      description: 'Concurrency leases this instance holds',
      unit: '{lease}',
    });
    const blockCacheAnswers = meter.createObservableCounter('rate_limit.block_cache.answers', {
      description: 'Rejections answered from the local block cache, without the store',
      unit: '{decision}',
    });
    this.storeDuration = meter.createHistogram('rate_limit.store.duration', {
      description: 'Duration of each call to the Redis or custom rate-limit store',
      unit: 's',
      advice: { explicitBucketBoundaries: STORE_BUCKETS_S },
    });
    this.waitDuration = meter.createHistogram('rate_limit.wait.duration', {
      description: 'Time spent waiting for a slot (maxWait, acquire, run)',
      unit: 's',
      advice: { explicitBucketBoundaries: WAIT_BUCKETS_S },
    });
    this.stateChanges = meter.createCounter('rate_limit.store.state_changes', {
      description: 'Changes of the store circuit breaker and of outages, by new state',
      unit: '{change}',
    });
    if (!this.metricsOn) return;
    meter.addBatchObservableCallback(
      (result) => {
        for (const s of this.series.decisionSeries()) {
          if (s.decisions > 0) result.observe(decisions, s.decisions, s.attributes);
          if (s.nearLimit > 0) result.observe(nearLimit, s.nearLimit, s.attributes);
        }
        for (const s of this.series.policySeriesAll()) {
          if (s.leased) result.observe(leases, s.leases, s.attributes);
          if (s.blockCacheAnswers > 0) {
            result.observe(blockCacheAnswers, s.blockCacheAnswers, s.attributes);
          }
        }
      },
      [decisions, nearLimit, leases, blockCacheAnswers],
    );
  }

  decided(
    route: string,
    decision: RateLimitDecision,
    waited: boolean,
    onSpan: 'attributes' | 'event',
  ): void {
    const span = this.recordingSpan();
    if (this.metricsOn || span !== undefined) this.record(route, decision, waited, span, onSpan);
  }

  counted(route: string, pending: Promise<RateLimitDecision>): Promise<RateLimitDecision> {
    // The span active now is the one the decision belongs to.
    const span = this.recordingSpan();
    if (!this.metricsOn && span === undefined) return pending;
    return pending.then((decision) => {
      this.record(route, decision, false, span, 'event');
      return decision;
    });
  }

  waited(
    route: string,
    decision: RateLimitDecision,
    startedAt: number,
    outcome: WaitOutcome,
  ): void {
    const by = decision.allowed ? binding(decision.policies) : rejecting(decision.policies);
    const { attributes } = this.series.decision(route, by.policy)[outcome];
    const endedAt = performance.now();
    if (this.metricsOn) this.waitDuration.record((endedAt - startedAt) / 1000, attributes);
    this.childSpan(WAIT_SPAN, attributes, startedAt, endedAt, true);
  }

  storeCall(op: StoreOperation, ok: boolean, startedAt: number, endedAt: number): void {
    const attributes = this.series.storeCalls[op][ok ? 0 : 1];
    if (this.metricsOn) this.storeDuration.record((endedAt - startedAt) / 1000, attributes);
    this.childSpan(STORE_SPAN, attributes, startedAt, endedAt, ok);
  }

  leases(policy: ResolvedPolicy, change: 1 | -1): void {
    if (!this.metricsOn) return;
    const series = this.series.policy(policy);
    series.leases += change;
    series.leased = true;
  }

  blockCacheAnswered(policies: readonly ResolvedPolicy[]): void {
    if (this.metricsOn) this.series.policy(policies[0]).blockCacheAnswers++;
  }

  storeState(state: StoreState): void {
    if (this.metricsOn) this.stateChanges.add(1, this.series.states[state]);
  }

  private record(
    route: string,
    decision: RateLimitDecision,
    waited: boolean,
    span: Span | undefined,
    onSpan: 'attributes' | 'event',
  ): void {
    const outcome = outcomeOf(decision, waited);
    const answers = decision.policies;
    const by =
      outcome === 'limited' || outcome === 'shadow_limited' ? rejecting(answers) : binding(answers);
    const series = this.series.decision(route, by.policy)[outcome];
    if (this.metricsOn) {
      series.decisions++;
      if (outcome === 'allowed' || outcome === 'waited') {
        const near = nearLimitOf(answers, this.nearLimitFraction);
        if (near !== undefined) this.series.decision(route, near.policy)[outcome].nearLimit++;
      }
    }
    if (span === undefined) return;
    if (onSpan === 'attributes') span.setAttributes(series.attributes);
    else span.addEvent(DECISION_EVENT, series.attributes);
  }

  /** The active span, when there is one and it records; undefined costs a context lookup. */
  private recordingSpan(): Span | undefined {
    const span = this.api.trace.getActiveSpan();
    return span !== undefined && span.isRecording() ? span : undefined;
  }

  /**
   * A span under the active one for something that has just ended, made only when the active
   * span records: it costs nothing on a request nobody traces.
   */
  private childSpan(
    name: string,
    attributes: OtelApi.Attributes,
    startedAt: number,
    endedAt: number,
    ok: boolean,
  ): void {
    if (this.recordingSpan() === undefined) return;
    const span = this.tracer.startSpan(
      name,
      { kind: SPAN_KIND_CLIENT, startTime: startedAt, attributes },
      this.api.context.active(),
    );
    if (!ok) span.setStatus({ code: STATUS_ERROR });
    span.end(endedAt);
  }
}

/** See {@link DecisionOutcome}. */
export function outcomeOf(decision: RateLimitDecision, waited: boolean): DecisionOutcome {
  if (decision.degraded !== undefined) return 'degraded';
  if (!decision.allowed) return 'limited';
  if (decision.shadow === true) return 'shadow_limited';
  return waited || (decision.waitMs ?? 0) > 0 ? 'waited' : 'allowed';
}

/** The policy that turned the request away: the first that rejected it. */
function rejecting(answers: readonly PolicyDecision[]): PolicyDecision {
  for (const answer of answers) if (!answer.allowed) return answer;
  return answers[0];
}

/** The policy with the fewest requests left (the first of those), as the decision reports. */
function binding(answers: readonly PolicyDecision[]): PolicyDecision {
  let found = answers[0];
  for (const answer of answers) if (answer.remaining < found.remaining) found = answer;
  return found;
}

/** The first policy left with fewer than `fraction` of its threshold, if any. */
function nearLimitOf(
  answers: readonly PolicyDecision[],
  fraction: number,
): PolicyDecision | undefined {
  for (const answer of answers) {
    if (answer.remaining < answer.limit * fraction) return answer;
  }
  return undefined;
}
