/**
 * The Valkey clients' contenders: the floor and rate-limiter-flexible on iovalkey and on GLIDE,
 * each called the way its documentation shows, so that ours on each client is compared with the
 * least a script costs there and with the peer that supports it.
 */
import { GlideClient, Script } from '@valkey/valkey-glide';
import { Redis as Iovalkey } from 'iovalkey';
import { RateLimiterValkey, RateLimiterValkeyGlide } from 'rate-limiter-flexible';
import { FLOOR_SCRIPT } from './floor-limiter.js';
import { type Limit, type Limiter, neverDegraded } from './limiter.js';
import { flexiblePoints, flexibleRow } from './peer-limiters.js';

export type ValkeyLibrary = 'iovalkey' | 'glide';

/** A connected iovalkey client with the library's defaults. */
export async function connectIovalkey(url: string): Promise<Iovalkey> {
  const client = new Iovalkey(url);
  await client.ping();
  return client;
}

/** A GLIDE standalone client with the library's defaults, to the server at `url`. */
export function connectGlide(url: string): Promise<GlideClient> {
  const { hostname, port } = new URL(url);
  return GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] });
}

/** The floor's script on iovalkey (`defineCommand`, EVALSHA) or GLIDE (`invokeScript`). */
export async function valkeyFloorLimiter(
  library: ValkeyLibrary,
  url: string,
  prefix: string,
  limit: Limit,
): Promise<Limiter> {
  let member = 0;
  const row = (client: unknown, run: (key: string) => Promise<unknown>, close: () => unknown) => ({
    client,
    decide: async (key: string) => (await run(`${prefix}:${key}`)) === 1,
    redisKeyMarker: (key: string) => `${prefix}:${key}`,
    degraded: neverDegraded,
    close: async () => void (await close()),
  });
  if (library === 'iovalkey') {
    const client = await connectIovalkey(url);
    client.defineCommand('benchFloorWindow', { numberOfKeys: 1, lua: FLOOR_SCRIPT });
    const command = (client as unknown as { benchFloorWindow: FloorCommand }).benchFloorWindow;
    return row(
      client,
      (key) => command.call(client, key, Date.now(), limit.periodMs, limit.threshold, ++member),
      () => client.quit(),
    );
  }
  const client = await connectGlide(url);
  const script = new Script(FLOOR_SCRIPT);
  const window = String(limit.periodMs);
  const threshold = String(limit.threshold);
  return row(
    client,
    (key) =>
      client.invokeScript(script, {
        keys: [key],
        args: [String(Date.now()), window, threshold, String(++member)],
      }),
    () => {
      script.release();
      client.close();
    },
  );
}

type FloorCommand = (...args: Array<string | number>) => Promise<number>;

/** rate-limiter-flexible's RateLimiterValkey (iovalkey) or RateLimiterValkeyGlide (GLIDE). */
export async function valkeyFlexibleLimiter(
  library: ValkeyLibrary,
  url: string,
  limit: Limit,
  prefix: string,
): Promise<Limiter> {
  const options = { keyPrefix: prefix, ...flexiblePoints(limit) };
  if (library === 'iovalkey') {
    const client = await connectIovalkey(url);
    const limiter = new RateLimiterValkey({ storeClient: client, ...options });
    return flexibleRow(limiter, client, prefix, async () => void (await client.quit()));
  }
  const client = await connectGlide(url);
  const limiter = new RateLimiterValkeyGlide({ storeClient: client, ...options });
  return flexibleRow(limiter, client, prefix, async () => client.close());
}
