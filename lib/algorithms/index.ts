import { type Algorithm, type AlgorithmTwin } from './algorithm.js';
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
} as Record<Algorithm, AlgorithmTwin<unknown, unknown>>);

/** Lua sources, in the order they are joined into one script: prelude, algorithms, driver. */
export const LUA_FILES = [
  'prelude',
  'sliding-window',
  'sliding-window-counter',
  'fixed-window',
  'token-bucket',
  'gcra',
  'decide',
] as const;
