import { type Algorithm, type AlgorithmTwin } from './algorithm.js';
import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';

/** Every algorithm's in-process twin, by name. */
export const TWINS: Readonly<Record<Algorithm, AlgorithmTwin<unknown, unknown>>> = Object.freeze({
  'sliding-window': slidingWindow,
  'sliding-window-counter': slidingWindowCounter,
  'fixed-window': fixedWindow,
  'token-bucket': tokenBucket,
  'leaky-bucket': gcra,
  concurrency,
} as Record<Algorithm, AlgorithmTwin<unknown, unknown>>);

/** Each algorithm's Lua file (without `.lua`), by its code in keys and script arguments. */
export const LUA_ALGORITHMS: Readonly<Record<string, string>> = Object.freeze({
  sw: 'sliding-window',
  swc: 'sliding-window-counter',
  fw: 'fixed-window',
  tb: 'token-bucket',
  gcra: 'gcra',
  cc: 'concurrency',
});
