import { parseDuration } from '../policy/validation.js';
import { configError } from '../policy/validation.js';

/** Midnight UTC on 1 January 2025: a start on every window's edge, so windows begin with a test. */
const DEFAULT_START_MS = Date.UTC(2025, 0, 1);

/**
 * A clock that moves only when a test says so, for the module's `clock`: limits then run out
 * and come back exactly when the test advances it, never with the machine's speed. Time in
 * milliseconds.
 *
 * @example
 * ```ts
 * const clock = new TestClock();
 * const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
 *   .overrideProvider(RATE_LIMIT_CLOCK)
 *   .useValue(clock)
 *   .compile();
 * // … three calls: 200, 200, 429
 * clock.advance('30s'); // the window has passed: 200 again
 * ```
 */
export class TestClock {
  private ms: number;

  /** Starts at `startMs` (ms since the epoch); by default midnight UTC, 1 January 2025. */
  constructor(startMs: number = DEFAULT_START_MS) {
    if (!Number.isFinite(startMs)) {
      throw configError('new TestClock', 'startMs', startMs, 'a finite number of milliseconds');
    }
    this.ms = startMs;
  }

  /** The current time in ms. Bound: `clock: testClock.now` works as the module's `clock` too. */
  readonly now = (): number => this.ms;

  /**
   * Moves the clock forward: a number of milliseconds (unlike a policy's `period`, where a
   * number means seconds, since `now()` is in ms too), or a duration such as `'500ms'`, `'30s'`,
   * `'1m'`, `'2h'`, `'1d'`. Returns the new time.
   *
   * @example
   * ```ts
   * clock.advance('1m');
   * clock.advance(250);
   * ```
   */
  advance(msOrDuration: number | string): number {
    this.ms += stepOf(msOrDuration);
    return this.ms;
  }
}

function stepOf(value: number | string): number {
  if (typeof value === 'string') return parseDuration(value, 'duration', 'TestClock.advance');
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw configError(
      'TestClock.advance',
      'duration',
      value,
      "a number of ms, at least 0, or a string like '30s'",
    );
  }
  return value;
}
