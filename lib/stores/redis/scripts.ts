import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LUA_ALGORITHMS } from '../../algorithms/index.js';

/** One decision script: a name for logs and errors, its text, and the SHA1 it runs by. */
export interface DecisionScript {
  readonly command: string;
  readonly lua: string;
  readonly sha: string;
}

const source = (name: string) =>
  readFileSync(new URL(`../../algorithms/${name}.lua`, import.meta.url), 'utf8');

// Prefixed so the commands cannot clash with a user's own `defineCommand`.
const COMMAND_PREFIX = 'rateLimitDecide';

/**
 * A decision script holding the given algorithms: the shared prelude, those algorithms, then the
 * driver, joined once at load time. The text is fixed; keys and values travel only in KEYS and ARGV.
 */
function decisionScript(command: string, algorithms: readonly string[]): DecisionScript {
  const lua = [
    // A Redis 7 shebang without flags: the server refuses the whole script up front when it is out
    // of memory, instead of refusing whichever write comes first (or none, once one has happened).
    '#!lua',
    source('prelude'),
    ...algorithms.map(source),
    source('decide'),
  ].join('\n');
  return { command, lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/**
 * The scripts a store defines. Redis runs a script's whole body on every call, defining every
 * function in it anew, so a decision whose policies all use one algorithm (the usual case) runs a
 * script with only that algorithm in it; routes that mix algorithms run the one with all of them.
 */
export const DECISION_SCRIPTS: Readonly<Record<string, DecisionScript>> = Object.freeze({
  ...Object.fromEntries(
    Object.entries(LUA_ALGORITHMS).map(([code, file]) => [
      code,
      decisionScript(`${COMMAND_PREFIX}_${code}`, [file]),
    ]),
  ),
  mixed: decisionScript(COMMAND_PREFIX, Object.values(LUA_ALGORITHMS)),
});
