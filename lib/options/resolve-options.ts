import { configError, parseDuration } from '../policy/validation.js';
import { checkFields, knownFields, throttlerSuggestion } from '../policy/known-fields.js';
import { STORE_ERROR_POLICIES } from '../policy/rate-limit.policy.js';
import { defaultMemoryBudget, heapLimitBytes } from '../stores/memory/memory-size.js';
import { HEADER_MODES } from '../transports/http-headers.js';
import { resolveTelemetry } from '../telemetry/telemetry-options.js';
import {
  MODULE_OPTION_FIELDS,
  type RateLimitModuleOptions,
  type ResolvedRateLimitOptions,
} from './rate-limit.options.js';

export const DEFAULT_KEY_PREFIX = 'rate-limit';
export const DEFAULT_TIMEOUT_MS = 100;
export const DEFAULT_FUNCTION_TIMEOUT_MS = 1000;
export const DEFAULT_ERROR_MESSAGE = 'Too Many Requests';
export const DEFAULT_OVERRIDE_REFRESH_MS = 5000;

// The module holds no limits: those written where @nestjs/throttler's module held them go on routes.
const NO_LIMITS_HERE = 'in @RateLimit on a controller or method, as the module holds no limits';

// What a factory returns is the module options alone; forRoot() has taken globalGuard out already.
// @nestjs/throttler's options are named for what takes their place.
const MODULE_FIELDS = knownFields(MODULE_OPTION_FIELDS, {
  globalGuard: 'globalGuard goes beside useFactory in forRootAsync(), not in what it returns',
  ttl: `${throttlerSuggestion('ttl')}, ${NO_LIMITS_HERE}`,
  limit: `${throttlerSuggestion('limit')}, ${NO_LIMITS_HERE}`,
  throttlers: `@nestjs/throttler's throttlers become @RateLimit({ period, threshold }) on a controller or method, as the module holds no limits`,
  storage:
    "storage is @nestjs/throttler's name: give redis (a client, its options or a URL) or store (a custom RateLimitStore)",
  ignoreUserAgents:
    "ignoreUserAgents is @nestjs/throttler's: skipIf: (context) => boolean skips what it returns true for",
  setHeaders: "setHeaders is @nestjs/throttler's name: headers: 'none' sends none",
  ipv6SubnetPrefix: `did you mean "ipv6Subnet"? ipv6SubnetPrefix is @nestjs/throttler's name`,
  generateKey:
    "generateKey is @nestjs/throttler's: a policy's scope shares its limit between routes, keyPrefix namespaces every key",
});

/** Validates options once, at bootstrap, into a frozen form the hot path never re-checks. */
export function resolveOptions(raw: RateLimitModuleOptions | undefined): ResolvedRateLimitOptions {
  const where = 'RateLimitModule options';
  if (raw == null || typeof raw !== 'object') throw configError(where, 'options', raw, 'an object');
  if (Array.isArray(raw)) {
    // @nestjs/throttler's forRoot() takes its list of throttlers in place of the options.
    const expected = `an object, not a list of limits: those go ${NO_LIMITS_HERE}`;
    throw configError(where, 'options', raw, expected);
  }
  checkFields(raw, MODULE_FIELDS, where);
  const keyPrefix = raw.keyPrefix ?? DEFAULT_KEY_PREFIX;
  if (typeof keyPrefix !== 'string' || /[{}\s]/.test(keyPrefix)) {
    throw configError(where, 'keyPrefix', keyPrefix, 'a string without braces or spaces');
  }
  const headers = raw.headers ?? 'ietf';
  if (!HEADER_MODES.includes(headers)) {
    throw configError(where, 'headers', headers, `one of ${HEADER_MODES.join(', ')}`);
  }
  const errorMessage = raw.errorMessage ?? DEFAULT_ERROR_MESSAGE;
  if (typeof errorMessage !== 'string')
    throw configError(where, 'errorMessage', errorMessage, 'a string');
  if (raw.getTracker !== undefined && typeof raw.getTracker !== 'function') {
    throw configError(where, 'getTracker', raw.getTracker, 'a function');
  }
  const ipv6Subnet = raw.ipv6Subnet ?? 64;
  if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128) {
    throw configError(where, 'ipv6Subnet', ipv6Subnet, 'an integer from 1 to 128');
  }
  if (raw.redis !== undefined && raw.store !== undefined) {
    throw configError(where, 'store', 'a store', 'omitted when redis is given (pick one)');
  }
  if (raw.clock !== undefined && typeof raw.clock !== 'function') {
    throw configError(where, 'clock', raw.clock, 'a function returning milliseconds');
  }
  const timeout = checkTimeout(raw.timeout ?? DEFAULT_TIMEOUT_MS, 'timeout', where);
  const functionTimeout = checkTimeout(
    raw.functionTimeout ?? DEFAULT_FUNCTION_TIMEOUT_MS,
    'functionTimeout',
    where,
  );
  const onStoreError = raw.onStoreError ?? 'memory';
  if (typeof onStoreError !== 'function' && !STORE_ERROR_POLICIES.includes(onStoreError)) {
    throw configError(
      where,
      'onStoreError',
      onStoreError,
      `one of ${STORE_ERROR_POLICIES.join(', ')}, or a function returning one`,
    );
  }
  const blockCache = raw.blockCache ?? true;
  if (typeof blockCache !== 'boolean') {
    throw configError(where, 'blockCache', blockCache, 'true or false');
  }
  for (const hook of ['onDecision', 'onLimited', 'skipIf'] as const) {
    if (raw[hook] !== undefined && typeof raw[hook] !== 'function') {
      throw configError(where, hook, raw[hook], 'a function');
    }
  }
  const shadow = raw.shadow ?? false;
  if (typeof shadow !== 'boolean') throw configError(where, 'shadow', shadow, 'true or false');
  const overrideRefreshMs = parseDuration(
    raw.overrideRefresh ?? DEFAULT_OVERRIDE_REFRESH_MS / 1000,
    'overrideRefresh',
    where,
  );
  // Past an hour, an instance that missed a change would keep stale limits for too long to notice.
  if (overrideRefreshMs < 100 || overrideRefreshMs > 3_600_000) {
    throw configError(where, 'overrideRefresh', raw.overrideRefresh, "from '100ms' to '1h'");
  }
  const heapLimit = heapLimitBytes();
  const maxMemoryBytes = raw.maxMemoryBytes ?? defaultMemoryBudget();
  if (!isWholeIn(maxMemoryBytes, 1, heapLimit)) {
    const expected = `a whole number of bytes from 1 to ${heapLimit} (this process's heap limit)`;
    throw configError(where, 'maxMemoryBytes', maxMemoryBytes, expected);
  }
  const maxMemoryKeys = raw.maxMemoryKeys;
  if (maxMemoryKeys !== undefined && !isWholeIn(maxMemoryKeys, 1, Number.MAX_SAFE_INTEGER)) {
    throw configError(where, 'maxMemoryKeys', maxMemoryKeys, 'a positive integer');
  }
  return Object.freeze({
    keyPrefix,
    getTracker: raw.getTracker,
    headers,
    errorMessage,
    ipv6Subnet,
    timeout,
    functionTimeout,
    onStoreError,
    maxMemoryBytes,
    maxMemoryKeys,
    blockCache,
    onDecision: raw.onDecision,
    onLimited: raw.onLimited,
    skipIf: raw.skipIf,
    shadow,
    telemetry: resolveTelemetry(raw.telemetry, where),
    overrideRefreshMs,
  });
}

function isWholeIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
}

function checkTimeout(value: unknown, field: string, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 60_000) {
    throw configError(where, field, value, 'a whole number of ms from 1 to 60000');
  }
  return value;
}
