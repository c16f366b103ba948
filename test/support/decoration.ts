/** Defining a class with `@RateLimit` policies, and the error that defining it throws. */
import { RateLimit, RateLimitConfigError, type RoutePolicy } from '../../lib/index.js';

/** Runs `define`, returning the RateLimitConfigError it threw; fails when it throws none. */
export function decorationError(define: () => unknown): RateLimitConfigError {
  try {
    define();
  } catch (error) {
    if (error instanceof RateLimitConfigError) return error;
    throw error;
  }
  throw new Error('the class was defined without an error');
}

/** Defines a class with `policies` on its method `X.m`. */
export function onMethod(policies: RoutePolicy | RoutePolicy[]) {
  return () => {
    class X {
      @RateLimit(policies)
      m() {}
    }
    return X;
  };
}
