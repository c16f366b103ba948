import { type Clock } from '../store-contract/store.interface.js';

// Read once: the getter costs more than the clock itself.
const TIME_ORIGIN_MS = performance.timeOrigin;

/** Wall time that never steps backwards within one process. */
export const monotonicClock: Clock = () => TIME_ORIGIN_MS + performance.now();

/** Integer microseconds, the unit every algorithm works in. */
export function toMicros(ms: number): number {
  return Math.floor(ms * 1000);
}
