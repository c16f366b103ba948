import { getHeapStatistics } from 'node:v8';
import { Leases } from '../../algorithms/kinds/concurrency.js';
import { ArrivalLog } from '../../algorithms/kinds/sliding-window.js';

/*
 * What a key costs the memory store's heap, estimated from its state's shape alone, so that it can
 * be worked out on each write without walking anything. The figures come from `npm run
 * bench:heap` (heap growth after a full GC per key, by algorithm, on Node 20 x64) and round up:
 * each estimate is at least what was measured with the Map at its emptiest (just grown), where a
 * key costs the most.
 */

/**
 * One key whatever its state: its slot in the Map (up to twice the slots there are keys, just
 * after the table grows), the entry object with its expiry, and the key string's header.
 */
export const KEY_OVERHEAD_BYTES = 200;
/** A state that is one number: one boxed double. */
export const NUMBER_STATE_BYTES = 16;
/**
 * A window count, a token bucket, GCRA's arrival time and record, two windows, or a lock-out: a
 * small object of numbers, sized for the largest of them, a bucket and the record of its fullest
 * moments that bounds a late give-back (five numbers: 135 B on Node 20 x64, rounded up).
 */
export const OBJECT_STATE_BYTES = 144;
/** The sliding log's object and its three arrays, with the spare room arrays keep as they grow. */
export const LOG_STATE_BYTES = 600;
/** Each entry in the log: its time, units and mark, plus the half again arrays reserve. */
export const LOG_ENTRY_BYTES = 32;
/** The concurrency leases' object and Map, before any lease. */
export const LEASES_STATE_BYTES = 240;
/** Each lease: its slot in that Map (room for twice as many), its name and its expiry. */
export const LEASE_BYTES = 88;

/**
 * Bytes a key and its state take on the heap, by estimate. A state shrunk in place (a log
 * trimmed, a lease released) keeps its last estimate until it is written again: the estimate
 * errs high, never low.
 */
export function entryBytes(key: string, state: unknown): number {
  return KEY_OVERHEAD_BYTES + key.length + stateBytes(state);
}

function stateBytes(state: unknown): number {
  if (typeof state === 'number') return NUMBER_STATE_BYTES;
  if (state instanceof ArrivalLog) return LOG_STATE_BYTES + LOG_ENTRY_BYTES * state.times.length;
  if (state instanceof Leases) return LEASES_STATE_BYTES + LEASE_BYTES * state.expiries.size;
  // A ledger of requests in flight (ledger.ts): a Map as the leases', of smaller entries.
  if (state instanceof Map) return LEASES_STATE_BYTES + LEASE_BYTES * state.size;
  return OBJECT_STATE_BYTES;
}

/** The share of the process's heap limit a memory store takes by default. */
export const DEFAULT_HEAP_SHARE = 0.25;

/** The heap limit of this process (`--max-old-space-size` and the young generation), in bytes. */
export function heapLimitBytes(): number {
  return getHeapStatistics().heap_size_limit;
}

/** The default byte budget of a memory store: a quarter of this process's heap limit. */
export function defaultMemoryBudget(): number {
  return Math.floor(heapLimitBytes() * DEFAULT_HEAP_SHARE);
}

/** The most entries a JavaScript Map holds (V8 throws past it). */
export const MAP_MAX_KEYS = 2 ** 24;
