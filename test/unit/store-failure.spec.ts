/**
 * Which errors of a store call count against the store (its breaker, its outage, `onStoreError`)
 * and which are the call's own: the errors each client library really makes, and the resilience
 * layer's handling of both, in front of a store of one's own.
 */
import { describe, expect, it } from '@jest/globals';
import {
  ClosingError,
  ConnectionError,
  RequestError,
  TimeoutError as GlideTimeoutError,
} from '@valkey/valkey-glide';
import {
  ClientClosedError,
  ConnectionTimeoutError,
  SimpleError,
  SocketClosedUnexpectedlyError,
} from 'redis';
import { ReplyError } from 'ioredis';
import { MemoryStore, RateLimitConfigError, type RateLimitDecision } from '../../lib/index.js';
import { BatchedDecisionError } from '../../lib/stores/redis/decisions/batch-call.js';
import { ResilientStore } from '../../lib/stores/resilience/resilient.store.js';
import { StoreLateError } from '../../lib/stores/redis/answer-deadline.js';
import { StoreNotConnectedError } from '../../lib/stores/redis/clients/script-client.js';
import { StoreTimeoutError } from '../../lib/stores/resilience/deadlines.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { OperationStore } from '../../lib/stores/operation-store.js';
import { type StoreCall } from '../../lib/store-contract/store-call.js';
import {
  failsThisDecisionOnly,
  isStoreFailure,
  StoreCallError,
} from '../../lib/stores/resilience/store-failure.js';
import { serverError } from '../../lib/stores/redis/clients/glide-replies.js';
import '../support/glide-logger.js';

/** A server's error reply as GLIDE rejects with it (`message`), and as the store reads it. */
const glideReply = (message: string) => serverError(new RequestError(message));
const SIGNALLED = 'An error was signalled by the server: - ';

describe('isStoreFailure', () => {
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  it.each([
    ['a timeout', new StoreTimeoutError(100)],
    ['a client not connected', new StoreNotConnectedError('ioredis', 'connect ECONNREFUSED')],
    ['a decision Redis reached too late', new StoreLateError()],
    ['a reset socket', reset],
    ["a connection closed: 'Connection is closed.'", new Error('Connection is closed.')],
    ['a ClientClosedError', new ClientClosedError()],
    ['a SocketClosedUnexpectedlyError', new SocketClosedUnexpectedlyError()],
    ['a ConnectionTimeoutError', new ConnectionTimeoutError()],
    ['GLIDE: a closed client', new ClosingError('the client was closed')],
    ['GLIDE: a broken connection', new ConnectionError('Received connection error')],
    ['GLIDE: a request timeout', new GlideTimeoutError('timed out')],
    [
      'OOM, a ReplyError',
      new ReplyError("OOM command not allowed when used memory > 'maxmemory'."),
    ],
    [
      'OOM, a SimpleError',
      new SimpleError("OOM command not allowed when used memory > 'maxmemory'."),
    ],
    [
      'OOM, from GLIDE',
      glideReply(
        `${SIGNALLED}ResponseError: OOM command not allowed when used memory > 'maxmemory'.`,
      ),
    ],
    ['a server loading its data', new ReplyError('LOADING Redis is loading the dataset in memory')],
    ['a server busy with a script', new ReplyError('BUSY Redis is busy running a script.')],
    [
      'a replica after a failover',
      new ReplyError("READONLY You can't write against a read only replica."),
    ],
    [
      'a replica without its master',
      glideReply(
        "MASTERDOWN: Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
      ),
    ],
    ['a cluster down', glideReply('CLUSTERDOWN: The cluster is down')],
    [
      'a server that cannot persist',
      new ReplyError('MISCONF Redis is configured to save RDB snapshots'),
    ],
    ['a script the store could not load', new ReplyError('NOSCRIPT No matching script.')],
    [
      'a user refused the function',
      new SimpleError('NOPERM User rl has no permissions to run the fcall command'),
    ],
    ['a proxy that lost its server', new ReplyError('ERR no upstream host')],
    ['what a store of your own throws', new Error('the table is throttled')],
    ['something that is not an Error', 'a string'],
  ])('counts %s against the store', (_, error) => {
    expect(isStoreFailure(error)).toBe(true);
  });

  const luaError = 'attempt to perform arithmetic on a nil value script: f, on @user_function:3.';
  it.each([
    ['an invalid value', new RateLimitConfigError('@RateLimit on X.m: anchor must be …')],
    [
      'a call this process could not build',
      new StoreCallError('build the decision', new RangeError('Invalid time value')),
    ],
    [
      'a key of another type, a ReplyError',
      new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value'),
    ],
    [
      'a key of another type, a SimpleError',
      new SimpleError('WRONGTYPE Operation against a key holding the wrong kind of value'),
    ],
    [
      'a key of another type (GLIDE)',
      glideReply('WRONGTYPE: Operation against a key holding the wrong kind of value'),
    ],
    [
      'keys in several slots',
      new ReplyError("CROSSSLOT Keys in request don't hash to the same slot"),
    ],
    ['a Lua error of a function, a ReplyError', new ReplyError(`ERR user_function:3: ${luaError}`)],
    ['a Lua error of a script, a SimpleError', new SimpleError(`ERR user_script:1: ${luaError}`)],
    ['a Lua error (GLIDE)', glideReply(`${SIGNALLED}ResponseError: user_function:3: ${luaError}`)],
    [
      'a Lua error of one decision of a batch',
      new BatchedDecisionError('user_function:57: attempt to compare nil with number'),
    ],
    [
      'a key of another type in a batch',
      new BatchedDecisionError('WRONGTYPE Operation against a key holding the wrong kind of value'),
    ],
  ])("takes %s for the call's own", (_, error) => {
    expect(isStoreFailure(error)).toBe(false);
  });
});

const POLICY = resolvePolicy({ period: 60, threshold: 5 }, 'test');

/** A store of one's own that fails each call with the error `next` gives, or decides it in memory. */
class FailingStore extends OperationStore {
  private readonly memory = new MemoryStore();
  constructor(readonly next: () => unknown) {
    super();
  }
  execute(call: StoreCall): Promise<RateLimitDecision> {
    const error = this.next();
    return error === undefined ? this.memory.execute(call) : Promise.reject(error);
  }
}

function resilient(next: () => unknown) {
  const warnings: string[] = [];
  const told: Error[] = [];
  const store = new ResilientStore(new FailingStore(next), {
    timeoutMs: 1000,
    onStoreError: (error) => {
      told.push(error);
      return 'memory';
    },
    fallback: new MemoryStore(),
    ownsPrimary: false,
    logger: { warn: (m) => warnings.push(m), log: () => {} },
  });
  const consume = (key: string) => store.consume([key], [POLICY], [1]);
  const fallbackAnswers = () => [...store.servers()].reduce((n, s) => n + s.fallbackAnswers, 0);
  return { store, consume, warnings, told, fallbackAnswers };
}

describe("the resilience layer and a call's own errors", () => {
  it('rejects each call that fails for its own reason, and leaves the store healthy for the others', async () => {
    const own = new StoreCallError('build the decision', new RangeError('Invalid time value'));
    let calls = 0;
    const { store, consume, warnings, told, fallbackAnswers } = resilient(() =>
      calls++ % 2 === 0 ? own : undefined,
    );
    for (let i = 0; i < 10; i++) {
      await expect(consume('odd')).rejects.toBe(own);
      const decision = await consume('normal');
      expect([decision.allowed, decision.degraded]).toEqual([i < 5, undefined]);
    }
    expect(store.degraded).toBe(false);
    expect([...store.servers()].map((s) => s.breaker.state)).toEqual(['closed']);
    expect(fallbackAnswers()).toBe(0);
    expect(warnings).toEqual([]);
    expect(told).toEqual([]);
  });

  it('lets the next call probe when the probe failed for its own reason', async () => {
    const queue: unknown[] = [reset(), reset(), reset()];
    const { store, consume, told } = resilient(() => queue.shift());
    for (let i = 0; i < 3; i++) expect((await consume('k')).degraded).toBe('memory');
    expect(told).toHaveLength(3);
    const [server] = store.servers();
    expect(server.breaker.state).toBe('open');
    await new Promise((resolve) =>
      setTimeout(resolve, server.breaker.waitMs(performance.now()) + 5),
    );
    // The probe fails for its own reason: the next call probes, and finds the store back.
    queue.push(new RateLimitConfigError('@RateLimit on X.m: anchor must be …'));
    await expect(consume('k')).rejects.toBeInstanceOf(RateLimitConfigError);
    const decision = await consume('k');
    expect(decision.degraded).toBeUndefined();
    expect(server.breaker.state).toBe('closed');
    expect(told).toHaveLength(3);
  });
});

describe('the resilience layer and what the stores tell it', () => {
  it('answers a call that waited on a failed one by onStoreError, asking the store no more', async () => {
    let asked = 0;
    const { store, told, fallbackAnswers } = resilient(() => {
      asked++;
      return asked === 1 ? reset() : undefined;
    });
    // The call the others waited on fails: onStoreError is asked, and answers 'memory'.
    expect((await store.consume(['k'], [POLICY], [1])).degraded).toBe('memory');
    const limits = { keys: ['k'], policies: [POLICY], costs: [1] };
    const waited = await store.execute({ op: 'consume', limits, failedMeanwhile: true });
    expect(waited.degraded).toBe('memory');
    expect(asked).toBe(1);
    expect(told).toHaveLength(1);
    expect(fallbackAnswers()).toBe(2);
  });

  it("answers a failure a store marks as its decision's alone by onStoreError, keeping the server healthy", async () => {
    const moving = () =>
      failsThisDecisionOnly(
        new ReplyError('TRYAGAIN Multiple keys request during rehashing of slot'),
      );
    const { store, consume, warnings, told } = resilient(moving);
    for (let i = 0; i < 5; i++) expect((await consume('k')).degraded).toBe('memory');
    expect(told).toHaveLength(5);
    expect(store.degraded).toBe(false);
    expect([...store.servers()].map((s) => s.breaker.state)).toEqual(['closed']);
    expect(warnings).toEqual([]);
  });
});

function reset(): Error {
  return Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
}
