import { readFileSync } from 'node:fs';

/** Reads a Lua script shipped beside the algorithms. Script text is fixed; data goes in KEYS/ARGV. */
function loadScript(name: string): string {
  return readFileSync(new URL(`../../algorithms/${name}.lua`, import.meta.url), 'utf8');
}

/** ioredis command names; prefixed so they cannot clash with a user's own `defineCommand`. */
export const SCRIPTS = {
  slidingWindow: { command: 'rateLimitSlidingWindow', lua: loadScript('sliding-window') },
} as const;
