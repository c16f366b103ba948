import { types } from 'node:util';

/**
 * Whether `value` is an Error, made in this realm or another: a socket's error (ECONNRESET) comes
 * from Node's own `Error`, which code loaded into a VM context, as Jest loads it, does not see as
 * `instanceof Error`.
 */
export function isError(value: unknown): value is Error {
  return value instanceof Error || types.isNativeError(value);
}
