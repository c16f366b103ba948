import { type ExecutionContext, Logger } from '@nestjs/common';
import { type DecisionHook, type ResolvedRateLimitOptions } from '../options/rate-limit.options.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';

type HookName = 'onDecision' | 'onLimited' | 'skipIf';

// Enough to see every distinct fault of a hook without letting a message with an id in it
// grow the set without bound.
const MAX_REPORTED = 100;

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  value != null && typeof (value as PromiseLike<unknown>).then === 'function';

/**
 * Runs the `skipIf`, `onDecision` and `onLimited` options so that a hook can never break a
 * request: what one throws (or rejects with) is logged once per distinct message, with the
 * context `RateLimit`, and the request goes on as if the hook were not there. The guard calls
 * these only when the option is set.
 */
export class DecisionHooks {
  readonly skipIf: ResolvedRateLimitOptions['skipIf'];
  readonly onDecision: DecisionHook | undefined;
  readonly onLimited: DecisionHook | undefined;
  private readonly logger = new Logger('RateLimit');
  private readonly reported = new Set<string>();

  constructor(options: ResolvedRateLimitOptions) {
    this.skipIf = options.skipIf;
    this.onDecision = options.onDecision;
    this.onLimited = options.onLimited;
  }

  /** Whether `skipIf` says to leave the call uncounted; a failing `skipIf` counts it. */
  skip(context: ExecutionContext): boolean | Promise<boolean> {
    try {
      const answer: unknown = this.skipIf!(context);
      if (!isThenable(answer)) return answer === true;
      return Promise.resolve(answer).then(
        (value) => value === true,
        (error: unknown) => this.failed('skipIf', error, false),
      );
    } catch (error) {
      return this.failed('skipIf', error, false);
    }
  }

  decided(context: ExecutionContext, decision: RateLimitDecision): void {
    this.run('onDecision', this.onDecision!, context, decision);
  }

  limited(context: ExecutionContext, decision: RateLimitDecision): void {
    this.run('onLimited', this.onLimited!, context, decision);
  }

  private run(
    name: HookName,
    hook: DecisionHook,
    context: ExecutionContext,
    decision: RateLimitDecision,
  ): void {
    try {
      // Not awaited: a hook is told about a decision, it does not hold the request up.
      const result: unknown = hook(context, decision);
      if (isThenable(result)) {
        result.then(undefined, (error: unknown) => this.failed(name, error, undefined));
      }
    } catch (error) {
      this.failed(name, error, undefined);
    }
  }

  private failed<T>(name: HookName, error: unknown, answer: T): T {
    const message = error instanceof Error ? error.message : String(error);
    const key = `${name}\u0000${message}`;
    if (!this.reported.has(key) && this.reported.size < MAX_REPORTED) {
      this.reported.add(key);
      const text = `The ${name} hook failed: ${message}; the request went on without it`;
      if (error instanceof Error && error.stack !== undefined) this.logger.error(text, error.stack);
      else this.logger.error(text);
    }
    return answer;
  }
}
