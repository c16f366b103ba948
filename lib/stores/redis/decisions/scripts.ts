import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { REGISTRY } from '../../../algorithms/registry.js';
import { type ResolvedPolicy } from '../../../policy/rate-limit.policy.js';

/** One decision script: a name for logs and errors, its text, and the SHA1 it runs by. */
export interface DecisionScript {
  readonly command: string;
  readonly lua: string;
  readonly sha: string;
}

/**
 * The decision library for Redis Functions: one function that runs every algorithm, and one that
 * runs a batch of decisions.
 */
export interface DecisionLibrary {
  /** The library's name; it carries a hash of the code, so each version loads beside the others. */
  readonly name: string;
  /** The function to FCALL, named like the library (function names are global in Redis). */
  readonly fn: string;
  /** The function that takes a batch of decisions (see batch.lua). */
  readonly batchFn: string;
  /** The function for the usual decision, its id kept in the library's memory (`decide_one`). */
  readonly oneFn: string;
  /** The read-only function that answers the epoch of that memory, for FCALL_RO. */
  readonly epochFn: string;
  /** The text for FUNCTION LOAD. */
  readonly code: string;
}

const source = (name: string) =>
  readFileSync(new URL(`../../../algorithms/${name}.lua`, import.meta.url), 'utf8');

/** An algorithm's own script, beside its twin in `algorithms/kinds/`. */
const algorithmSource = (name: string) => source(`kinds/${name}`);

// Prefixed so the commands cannot clash with a user's own `defineCommand`.
const COMMAND_PREFIX = 'rateLimitDecide';

/**
 * The shared prelude, the given algorithms, decision ids, the ledgers of requests in flight, then
 * the driver that defines `decide`.
 */
const body = (algorithms: readonly string[]) =>
  [
    source('prelude'),
    ...algorithms.map(algorithmSource),
    source('once'),
    source('ledger'),
    source('decide'),
  ].join('\n');

const ALL_ALGORITHMS = REGISTRY.map((e) => e.lua);

// Every algorithm and the batch driver: what both the batch script and the library hold.
const BATCH_BODY = `${body(ALL_ALGORITHMS)}\n${source('batch')}`;

/**
 * A decision script holding the given algorithms, joined once at load time. The text is fixed;
 * keys and values travel only in KEYS and ARGV.
 */
function decisionScript(command: string, lua: string): DecisionScript {
  return { command, lua, sha: createHash('sha1').update(lua).digest('hex') };
}

// A Redis 7 shebang without flags: the server refuses the whole script up front when it is out
// of memory, instead of refusing whichever write comes first (or none, once one has happened).
const scriptText = (code: string, call: string) =>
  ['#!lua', code, `return ${call}(KEYS, ARGV)`].join('\n');

/**
 * The scripts a store falls back to where Functions are unavailable. Redis runs a script's whole
 * body on every call, defining every function in it anew, so a decision whose policies all use
 * one algorithm (the usual case) runs a script with only that algorithm in it; routes that mix
 * algorithms run the one with all of them.
 */
export const DECISION_SCRIPTS: Readonly<Record<string, DecisionScript>> = Object.freeze({
  ...Object.fromEntries(
    REGISTRY.map(({ code, lua: file }) => [
      code,
      decisionScript(`${COMMAND_PREFIX}_${code}`, scriptText(body([file]), 'decide')),
    ]),
  ),
  mixed: decisionScript(COMMAND_PREFIX, scriptText(body(ALL_ALGORITHMS), 'decide')),
});

/**
 * A batch of decisions where Functions are unavailable: every algorithm, since a batch may mix
 * them, and its body is defined once for the whole batch.
 */
export const BATCH_SCRIPT: DecisionScript = decisionScript(
  `${COMMAND_PREFIX}_batch`,
  scriptText(BATCH_BODY, 'decide_batch'),
);

/**
 * Every algorithm in one library: its body runs once, when it is loaded, so a call runs only the
 * decision itself. Registered without flags, so, like the scripts, it is refused up front when
 * the server is out of memory.
 */
export const DECISION_LIBRARY: DecisionLibrary = (() => {
  // Named by a hash of its code and of what it registers, so that a change to either loads
  // as a new library.
  const registered = (name: string) => [
    `redis.register_function('${name}', decide)`,
    `redis.register_function('${name}_batch', decide_batch)`,
    `redis.register_function('${name}_one', decide_one)`,
    `redis.register_function{function_name='${name}_epoch', callback=epoch, flags={'no-writes'}}`,
  ];
  const hash = createHash('sha1')
    .update([BATCH_BODY, ...registered('')].join('\n'))
    .digest('hex');
  const name = `ratelimit_${hash.slice(0, 16)}`;
  const code = [`#!lua name=${name}`, BATCH_BODY, ...registered(name)].join('\n');
  return Object.freeze({
    name,
    fn: name,
    batchFn: `${name}_batch`,
    oneFn: `${name}_one`,
    epochFn: `${name}_epoch`,
    code,
  });
})();

/** The script with only the algorithm every policy uses, or the one with all of them. */
export function scriptFor(policies: readonly ResolvedPolicy[]): DecisionScript {
  const code = policies[0].code;
  for (let i = 1; i < policies.length; i++) {
    if (policies[i].code !== code) return DECISION_SCRIPTS.mixed;
  }
  return DECISION_SCRIPTS[code];
}
