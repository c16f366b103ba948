import { type OpenTelemetryApi, OtelTelemetry } from './otel-telemetry.js';
import { NO_TELEMETRY, type RateLimitTelemetry, type StoreKind } from './rate-limit-telemetry.js';
import { type ResolvedTelemetry } from './telemetry-options.js';

/** Loads `@opentelemetry/api`, or resolves undefined when it is not installed. */
export type ApiLoader = () => Promise<OpenTelemetryApi | undefined>;

// A dynamic import, so that the library loads without the package: it is an optional peer.
const importApi: ApiLoader = () =>
  import('@opentelemetry/api').then(
    (api) => api,
    () => undefined,
  );

/**
 * The module's telemetry: {@link NO_TELEMETRY} when the option turns it off or
 * `@opentelemetry/api` is not installed, else one that records through the API.
 */
export async function loadTelemetry(
  setting: ResolvedTelemetry,
  store: StoreKind,
  load: ApiLoader = importApi,
): Promise<RateLimitTelemetry> {
  if (setting === false) return NO_TELEMETRY;
  const api = await load();
  return api === undefined ? NO_TELEMETRY : new OtelTelemetry(api, store, setting.nearLimit);
}
