/** Metadata key for the policy set by `@RateLimit()`. */
export const RATE_LIMIT_POLICY = Symbol('rate-limit:policy');
/** Metadata key set by `@SkipRateLimit()`. */
export const RATE_LIMIT_SKIP = Symbol('rate-limit:skip');
/**
 * Injection token for the validated, frozen module options (`ResolvedRateLimitOptions`). Nest
 * names it when it cannot find it, as for a `@UseGuards(RateLimitGuard)` in an app without the
 * module: its name says where it comes from.
 */
export const RATE_LIMIT_OPTIONS = Symbol(
  'RATE_LIMIT_OPTIONS, from RateLimitModule.forRoot() or forRootAsync()',
);
/** The options as the user gave them, before validation. */
export const RATE_LIMIT_RAW_OPTIONS = Symbol('RATE_LIMIT_RAW_OPTIONS');
/** The store plus whether the module created it (and so must close it). */
export const RATE_LIMIT_STORE_HANDLE = Symbol('RATE_LIMIT_STORE_HANDLE');
/**
 * The store as the module calls it (a `CallStore`): the `RateLimitStore` provider, adapted once.
 * A provider of its own, so that a test that overrides `RateLimitStore` gets its store adapted too.
 */
export const RATE_LIMIT_CALL_STORE = Symbol('RATE_LIMIT_CALL_STORE');
/** The module's telemetry (`RateLimitTelemetry`): metrics and trace spans, or nothing. */
export const RATE_LIMIT_TELEMETRY = Symbol('RATE_LIMIT_TELEMETRY');
/**
 * The clock the module's stores read (a `Clock`), `clock` of the options by default, `null` for
 * none. A token of its own so that a test can replace it without touching the app's options.
 */
export const RATE_LIMIT_CLOCK = Symbol('RATE_LIMIT_CLOCK');
/** Where instances share their activity for the console (an `ActivityExchange`). */
export const RATE_LIMIT_ACTIVITY = Symbol('RATE_LIMIT_ACTIVITY');
