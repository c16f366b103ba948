import { BadRequestException, HttpException, ServiceUnavailableException } from '@nestjs/common';
import { MAX_OVERRIDE_TRACKER_LENGTH } from '../overrides/override-bounds.js';
import { configError, RateLimitConfigError } from '../policy/validation.js';

// The checks of the console's input: a bad value is answered with 400 naming the route and the
// field, never 500.

export function checkTracker(where: string, tracker: unknown): string {
  if (typeof tracker !== 'string' || tracker.length === 0) {
    throw badField(where, 'tracker', tracker, 'a non-empty string');
  }
  if (tracker.length > MAX_OVERRIDE_TRACKER_LENGTH) {
    const expected = `at most ${MAX_OVERRIDE_TRACKER_LENGTH} characters`;
    throw badField(where, 'tracker', `${tracker.length} characters`, expected);
  }
  return tracker;
}

/** A JSON object body with only `fields`, else 400 naming the first that is not. */
export function bodyOf(
  where: string,
  body: unknown,
  fields: readonly string[],
): Record<string, unknown> {
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw badField(where, 'body', body, `a JSON object with ${fields.join(', ')}`);
  }
  for (const [field, value] of Object.entries(body)) {
    if (!fields.includes(field)) throw badField(where, field, value, `one of ${fields.join(', ')}`);
  }
  return body as Record<string, unknown>;
}

/** 400 naming the route (`where`) and the field, as a configuration error names them. */
export function badField(
  where: string,
  field: string,
  value: unknown,
  expected: string,
): BadRequestException {
  return badRequest(field, configError(where, field, value, expected).message);
}

function badRequest(field: string, message: string): BadRequestException {
  return new BadRequestException({ statusCode: 400, error: 'Bad Request', field, message });
}

/**
 * Runs `fn`, answering a configuration error it throws (a bad field) with 400 naming the field,
 * and the console's route `where` when the error names the service's method instead.
 */
export function badRequestOn<T>(fn: () => T, where?: string): T {
  const asBadRequest = (error: unknown): never => {
    if (!(error instanceof RateLimitConfigError)) throw error;
    const named = /: (?:unknown field "([^"]+)"|([A-Za-z]+) must)/.exec(error.message);
    const name = named?.[1] ?? named?.[2] ?? 'body';
    const field = name === 'policyName' ? 'policy' : name;
    throw badRequest(field, where === undefined ? error.message : `${where}: ${error.message}`);
  };
  try {
    const result = fn();
    return (result instanceof Promise ? result.catch(asBadRequest) : result) as T;
  } catch (error) {
    return asBadRequest(error);
  }
}

/**
 * Runs `fn`, which reads or writes the store, answering a failure of the store with 503 naming
 * the route and saying what was not done, rather than 500. A bad field is still a 400.
 */
export async function storeCall<T>(
  where: string,
  notDone: string,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await badRequestOn(fn, where);
  } catch (error) {
    if (error instanceof HttpException) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw unavailable(where, `the store could not be reached (${reason}): ${notDone}`);
  }
}

export function unavailable(where: string, message: string): ServiceUnavailableException {
  return new ServiceUnavailableException({
    statusCode: 503,
    error: 'Service Unavailable',
    message: `${where}: ${message}`,
  });
}
