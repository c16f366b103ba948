import { type Clock } from './store.interface.js';

/** Wall time that never steps backwards within one process. */
export const monotonicClock: Clock = () => performance.timeOrigin + performance.now();

/** Integer microseconds, the unit every algorithm works in. */
export function toMicros(ms: number): number {
  return Math.floor(ms * 1000);
}
