import { checkFields, type FieldList, knownFields } from '../policy/known-fields.js';
import { configError } from '../policy/validation.js';

/** The `telemetry` module option's object form. */
export interface TelemetryOptions {
  /**
   * An allowed decision counts as near its limit (`rate_limit.near_limit`) when a policy has
   * fewer requests left than this fraction of its threshold. From 0 (never) to 1. Default 0.1.
   */
  nearLimit?: number;
}

/** The `telemetry` module option after validation: off, or on with its settings. */
export type ResolvedTelemetry = false | { readonly nearLimit: number };

export const DEFAULT_NEAR_LIMIT = 0.1;

const FIELDS = knownFields({ nearLimit: true } as const satisfies FieldList<TelemetryOptions>);

/** Validates the `telemetry` option: `true` (the default), `false`, or {@link TelemetryOptions}. */
export function resolveTelemetry(value: unknown, where: string): ResolvedTelemetry {
  if (value === undefined || value === true) return { nearLimit: DEFAULT_NEAR_LIMIT };
  if (value === false) return false;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError(where, 'telemetry', value, 'true, false or { nearLimit }');
  }
  checkFields(value, FIELDS, `${where} telemetry`);
  const nearLimit = (value as TelemetryOptions).nearLimit ?? DEFAULT_NEAR_LIMIT;
  if (typeof nearLimit !== 'number' || !(nearLimit >= 0 && nearLimit <= 1)) {
    throw configError(where, 'telemetry.nearLimit', nearLimit, 'a number from 0 to 1');
  }
  return Object.freeze({ nearLimit });
}
