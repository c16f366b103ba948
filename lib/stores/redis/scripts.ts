import { readFileSync } from 'node:fs';
import { LUA_FILES } from '../../algorithms/index.js';

/**
 * The decision script: the shared prelude, every algorithm, then the driver, joined once at
 * load time. The text is fixed; keys and values travel only in KEYS and ARGV.
 */
export const DECIDE_SCRIPT = [
  // A Redis 7 shebang without flags: the server refuses the whole script up front when it is out
  // of memory, instead of refusing whichever write comes first (or none, once one has happened).
  '#!lua',
  ...LUA_FILES.map((name) =>
    readFileSync(new URL(`../../algorithms/${name}.lua`, import.meta.url), 'utf8'),
  ),
].join('\n');

/** The ioredis command name; prefixed so it cannot clash with a user's own `defineCommand`. */
export const DECIDE_COMMAND = 'rateLimitDecide';
