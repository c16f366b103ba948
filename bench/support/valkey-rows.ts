/** The decisions section's Valkey part: its table, and Valkey's speed against Redis's. */
import { type DecisionsId } from './decisions-contenders.js';
import { ratio } from './markdown.js';

/** `table`: the Valkey rows, rendered; `pairedRatio`: a row over another, within rounds. */
export function renderValkeyRows(
  table: string,
  pairedRatio: (a: DecisionsId, b: DecisionsId) => number,
): string {
  const oursOnValkey = pairedRatio('ours:sliding-window@valkey', 'ours:sliding-window');
  const floorOnValkey = pairedRatio('floor@valkey', 'floor');
  return [
    '### On Valkey',
    '',
    'The same workload on a private valkey-server, in the same rounds as the rows above (one ' +
      'rotation over every row of both tables). The floor and ours run there on ioredis, to ' +
      'compare the servers, then on each client built for Valkey: iovalkey (the ioredis fork) ' +
      'and GLIDE (`@valkey/valkey-glide`, a Rust core under a Node binding). "vs floor" and ' +
      '"vs rate-limiter-flexible" divide by the floor and rate-limiter-flexible on the same ' +
      'client and the same server: `RateLimiterValkey` on iovalkey, `RateLimiterValkeyGlide` ' +
      'on GLIDE. The floor on GLIDE uses `invokeScript`, as GLIDE documents scripts; ours on ' +
      'GLIDE sends FCALL through `customCommand`.',
    '',
    table,
    '',
    `Valkey against Redis, ioredis on both, paired within rounds: ours (sliding window) ` +
      `${ratio(oursOnValkey)}, the floor ${ratio(floorOnValkey)}.`,
  ].join('\n');
}
