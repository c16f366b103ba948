/**
 * Keys under hostile input: pools of nasty routes and trackers, built into keys exactly the way
 * the guard builds them, must never share a key, must stay bounded in length, and must keep every
 * key of one decision under one Redis Cluster hash tag.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import { encodeKeyPart, RouteKeys, MAX_KEY_PART } from '../../lib/keys/route-keys.js';
import { DEFAULT_KEY_PREFIX } from '../../lib/options/resolve-options.js';
import { MAX_POLICIES, resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { longNasty, resplits, shortNasty, withLookalikes } from './fixtures/nasty.js';

// The longest names a policy may have, so the length bound is checked against the longest tails.
const DECISION = RATE_ALGORITHMS.map((algorithm, i) =>
  resolvePolicy(
    { period: '1h', threshold: 1000, algorithm, name: `${'n'.repeat(63)}${i}` },
    'abuse',
  ),
);
const TAILS = [
  ...DECISION.map((p, i) => RouteKeys.tail(p, i)),
  RouteKeys.tail(DECISION[0], MAX_POLICIES - 1),
];
const RUNS = 100;
const PAIRS_WANTED = 100_000;

/** Redis's hash tag rule: the text between the first `{` and the next `}`, if not empty. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/**
 * The pairs one run checks: every pair of the pool, every re-split of the short ones at a
 * separator, and each long string (with its twin one character shorter) against a few others.
 */
function hostilePairs(short: string[], long: string[]): Array<[string, string]> {
  const longs = long.flatMap((s) => [s, s.slice(0, -1)]);
  // The digests of the long strings join the pool as literals, to meet the strings themselves.
  const pool = withLookalikes([...short, ...longs.map(encodeKeyPart)]);
  const pairs: Array<[string, string]> = [];
  for (const route of pool) {
    for (const tracker of pool) {
      pairs.push([route, tracker]);
      if (route.length + tracker.length < 48) {
        for (const separator of ['|', '}', '%7C'])
          pairs.push(...resplits(route, tracker, separator));
      }
    }
  }
  // Long strings cost the most to encode; a few partners each are enough.
  for (const s of longs) {
    for (const other of [...pool.slice(0, 4), ...longs]) pairs.push([s, other], [other, s]);
  }
  return pairs;
}

function remember<T>(cache: Map<string, T>, s: string, make: (s: string) => T): T {
  let value = cache.get(s);
  if (value === undefined) cache.set(s, (value = make(s)));
  return value;
}

describe('keys under hostile routes and trackers', () => {
  const prefix = DEFAULT_KEY_PREFIX;
  const keys = new RouteKeys(prefix);
  // Each encoded part is either escaped text of at most MAX_KEY_PART UTF-16 units, none of them a
  // surrogate (surrogates are escaped), so at most 3 UTF-8 bytes each, or '#' + 43 base64url
  // characters. Around them: `<prefix>:{`, `|`, and the tail `}:<index>:<policy id>`.
  const maxChars = (tail: string) => prefix.length + 2 + 2 * MAX_KEY_PART + 1 + tail.length;
  const maxBytes = (tail: string) =>
    Buffer.byteLength(prefix) + 2 + 2 * 3 * MAX_KEY_PART + 1 + Buffer.byteLength(tail);
  const charBounds = TAILS.map(maxChars);
  const byteBounds = TAILS.map(maxBytes);

  /** Builds every key of every pair, returning what is wrong and how many distinct pairs it saw. */
  function check(pairs: Array<[string, string]>, serviceKeys: string[]) {
    // Collected instead of expect()ed in the loop, which would cost more than building the keys.
    const problems: string[] = [];
    // The UTF-8 bytes of every key built, which is what reaches Redis (one latin1 character per
    // byte), and what built them.
    const owner = new Map<string, string>();
    const claim = (bytes: Buffer, id: string) => {
      const spelled = bytes.toString('latin1');
      const other = owner.get(spelled);
      if (other !== undefined && other !== id) problems.push(`${other} and ${id} share a key`);
      owner.set(spelled, id);
    };
    const seen = new Set<string>();
    // The guard works out a route's head once and reuses it; so does this loop. The expected
    // tags come from the same encoder, remembered per string.
    const heads = new Map<string, string>();
    const encoded = new Map<string, string>();

    for (const [route, tracker] of pairs) {
      const pairId = JSON.stringify([route, tracker]);
      if (seen.has(pairId)) continue;
      seen.add(pairId);
      const head = remember(heads, route, (r) => keys.routeHead(r)) + encodeKeyPart(tracker);
      const tag = `${remember(encoded, route, encodeKeyPart)}|${remember(encoded, tracker, encodeKeyPart)}`;
      const start = `${prefix}:{${tag}}:`;
      for (let i = 0; i < TAILS.length; i++) {
        const key = head + TAILS[i];
        const bytes = Buffer.from(key, 'utf8');
        claim(bytes, `${pairId}/${i}`);
        if (hashTag(key) !== tag) problems.push(`${key}: hash tag is not ${tag}`);
        if (!key.startsWith(start)) problems.push(`${key}: does not start with ${start}`);
        // Well-formed UTF-16, so the bytes Redis gets spell this very key and no other.
        if (bytes.toString('utf8') !== key) problems.push(`${key}: not well-formed`);
        if (key.length > charBounds[i] || bytes.length > byteBounds[i]) {
          problems.push(`${key}: ${key.length} chars, ${bytes.length} bytes`);
        }
      }
    }
    // RateLimitService keys have no `|` in their tag, so they never meet a route's key.
    for (const key of serviceKeys) {
      for (let i = 0; i < DECISION.length; i++) {
        claim(Buffer.from(keys.forKey(key, DECISION[i], i)), `forKey:${JSON.stringify(key)}/${i}`);
      }
    }
    return { problems, pairs: seen.size };
  }

  it(`gives ${PAIRS_WANTED} distinct (route, tracker) pairs distinct, bounded keys with one hash tag per decision`, () => {
    let pairsChecked = 0;
    fc.assert(
      fc.property(
        fc.array(shortNasty, { minLength: 7, maxLength: 9 }),
        fc.array(longNasty, { maxLength: 2 }),
        (short, long) => {
          const result = check(hostilePairs(short, long), withLookalikes(short));
          pairsChecked += result.pairs;
          expect(result.problems.slice(0, 5)).toEqual([]);
        },
      ),
      { numRuns: RUNS },
    );
    expect(pairsChecked).toBeGreaterThanOrEqual(PAIRS_WANTED);
  });

  it('states the bound for the default layout: 429 characters and 1229 bytes with a seed policy', () => {
    const tail = RouteKeys.tail(resolvePolicy({ period: 30, threshold: 2 }, 'abuse'), 0);
    expect([maxChars(tail), maxBytes(tail)]).toEqual([429, 1229]);
    // Reached, not just respected: 200 three-byte characters on each side stay readable.
    const widest = '\u4e2d'.repeat(MAX_KEY_PART);
    const key = keys.routeHead(widest) + encodeKeyPart(widest) + tail;
    expect([key.length, Buffer.byteLength(key)]).toEqual([429, 1229]);
  });

  it('keeps an encoded part of exactly MAX_KEY_PART, hashes one past it, and escapes digests', () => {
    const atLimit = 'x'.repeat(MAX_KEY_PART - 3) + '{';
    expect(encodeKeyPart(atLimit)).toBe('x'.repeat(MAX_KEY_PART - 3) + '%7B');
    const digest = encodeKeyPart(atLimit + 'x');
    expect(digest).toMatch(/^#[A-Za-z0-9_-]{43}$/);
    // The digest given as a tracker of its own is escaped, so it cannot stand in for the original.
    expect(encodeKeyPart(digest)).toBe('%23' + digest.slice(1));
  });
});
