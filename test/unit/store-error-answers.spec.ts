/** Which answer a call gets while the store fails, from its policies' own and the module's. */
import { describe, expect, it } from '@jest/globals';
import { resolvePolicy, type StoreErrorPolicy } from '../../lib/policy/rate-limit.policy.js';
import { answerFor } from '../../lib/stores/resilience/store-error-answers.js';

const policy = (own?: StoreErrorPolicy) =>
  resolvePolicy({ period: '1m', threshold: 3, onStoreError: own }, 'test');

describe('answerFor: the strictest answer among a call’s policies', () => {
  it.each<[Array<StoreErrorPolicy | undefined>, StoreErrorPolicy, StoreErrorPolicy]>([
    // Without overrides, the module's answer, whatever it is.
    [[undefined], 'memory', 'memory'],
    [[undefined, undefined], 'deny', 'deny'],
    // One policy alone: its own answer, stricter or not.
    [['memory'], 'deny', 'memory'],
    [['allow'], 'deny', 'allow'],
    [['deny'], 'allow', 'deny'],
    // Any 'deny' denies; else any 'memory' decides in memory; else 'allow'.
    [['deny', undefined], 'memory', 'deny'],
    [['memory', undefined], 'deny', 'deny'],
    [['memory', undefined], 'allow', 'memory'],
    [['allow', undefined], 'memory', 'memory'],
    [['allow', 'memory'], 'deny', 'memory'],
    [['allow', 'allow'], 'deny', 'allow'],
    [['allow', 'deny', 'memory'], 'allow', 'deny'],
  ])('own %j, module %s: %s', (own, module, expected) => {
    expect(answerFor(own.map(policy), module)).toBe(expected);
  });
});
