/** Waits for the settle calls an app makes after its responses have gone. */
import { type StoreCall } from '../../lib/store-contract/store-call.js';
import { waitFor } from './wait-for.js';

/** A store the module built, which takes calls whole. */
export interface CallTaking {
  execute(call: StoreCall): Promise<unknown>;
}

/**
 * Follows the settle calls made on `store` (the app's `RateLimitStore`, which the guard calls): a
 * route settles once its response has ended, so a test waits for that before it looks.
 */
export function watchSettles(store: CallTaking): { settled(count: number): Promise<void> } {
  const execute = store.execute.bind(store);
  const settles: Promise<unknown>[] = [];
  store.execute = (call) => {
    const done = execute(call);
    if (call.op === 'settle') settles.push(done);
    return done;
  };
  return {
    async settled(count) {
      await waitFor(`${count} settles`, 5000, () =>
        Promise.resolve(settles.length >= count || `${settles.length} so far`),
      );
      await Promise.all(settles);
    },
  };
}
