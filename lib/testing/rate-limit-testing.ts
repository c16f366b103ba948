import { type INestApplicationContext } from '@nestjs/common';
import { type StoreHandle } from '../module/store-factory.js';
import { RATE_LIMIT_STORE_HANDLE } from '../rate-limit.constants.js';
import { ForwardingStore } from '../stores/forwarding-store.js';
import { MemoryStore } from '../stores/memory/memory.store.js';
import { type RateLimitStore } from '../store-contract/store.interface.js';
import { type CallStore } from '../store-contract/store-call.js';
import { AllowAllStore } from './allow-all.store.js';

/**
 * Switches an app's limits off, or clears them between tests, from the test alone: the app's
 * own `RateLimitModule.forRoot(...)` stays as it ships.
 */
export const RateLimitTesting = {
  /**
   * A store that allows every call, to put in place of the module's: every route and every
   * `RateLimitService` call passes, nothing is counted, and a limited route's headers show its
   * whole quota left. The module still builds its own store, so a Redis connection the app
   * configures is still made.
   *
   * @example
   * ```ts
   * const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
   *   .overrideProvider(RateLimitStore)
   *   .useValue(RateLimitTesting.allowAll())
   *   .compile();
   * ```
   */
  allowAll(): RateLimitStore {
    return new AllowAllStore();
  },

  /**
   * Forgets every count, lock-out, booking and lease the app's memory store holds, as if the app
   * had just started; call it between tests. Limits changed at runtime
   * (`RateLimitService.override`) stay: clear those with `RateLimitService.clearOverride`. For an
   * app whose limits live in Redis, or in a store of its own, it throws rather than leave state
   * behind: give each test its own `keyPrefix`, or flush the test server, instead.
   *
   * @example
   * ```ts
   * beforeEach(() => RateLimitTesting.reset(app));
   * ```
   */
  async reset(app: Pick<INestApplicationContext, 'get'>): Promise<void> {
    const handle = app.get<symbol, StoreHandle>(RATE_LIMIT_STORE_HANDLE, { strict: false });
    let store: CallStore = handle.chain;
    while (store instanceof ForwardingStore) store = store.inner;
    if (!(store instanceof MemoryStore)) {
      throw new Error(
        'RateLimitTesting.reset clears the memory store, but this app keeps its limits elsewhere ' +
          '(Redis or a store of its own): give each test its own keyPrefix, or flush the test server',
      );
    }
    // A memory store's close() empties it and leaves it working: all a reset needs.
    await store.close();
  },
};
