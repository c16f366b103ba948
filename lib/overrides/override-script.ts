import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type DecisionScript } from '../stores/redis/decisions/scripts.js';

/**
 * The script that sets, clears and lists the overrides in Redis (`overrides.lua`), run like the
 * decision scripts: EVALSHA, then EVAL when the server has lost it. Not a function of the decision
 * library: it runs a few times a minute at most, so a body run on each call costs nothing that
 * matters, and it needs no `FUNCTION` permission of its own.
 */
export const OVERRIDES_SCRIPT: DecisionScript = (() => {
  const lua = readFileSync(new URL('./overrides.lua', import.meta.url), 'utf8');
  return Object.freeze({
    command: 'rateLimitOverrides',
    lua,
    sha: createHash('sha1').update(lua).digest('hex'),
  });
})();
