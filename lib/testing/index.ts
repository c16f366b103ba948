// `nest-rate-limit/testing`: what a test of an app that uses the module needs. Nothing in the
// main entry imports it, so an app loads none of it unless its tests do.
export { TestClock } from './test-clock.js';
export { RateLimitTesting } from './rate-limit-testing.js';
export { RATE_LIMIT_CLOCK } from '../rate-limit.constants.js';
