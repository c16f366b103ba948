/** The `nest-rate-limit/console` entry point: the console module and its options. */
export { RateLimitConsoleModule } from './rate-limit-console.module.js';
export type { RateLimitConsoleOptions } from './console-options.js';
