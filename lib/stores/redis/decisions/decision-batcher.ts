import {
  type AloneCall,
  type Answers,
  answersOf,
  batchCall,
  BatchedDecisionError,
  type DecisionJob,
  type SentBatch,
  type Waiting,
} from './batch-call.js';
import { DECISION_SENDER, decisionIdKey, decisionNumber } from './decision-id.js';
import { type DecisionRunner, isNoFunction } from './decision-runner.js';
import { isEpochChanged, type LibraryMemory, StoreEpochError } from './library-memory.js';
import { failsThisDecisionOnly } from '../../resilience/store-failure.js';
import { keySlot } from '../key-slot.js';
import { BATCH_SCRIPT, DECISION_LIBRARY, type DecisionScript } from './scripts.js';

// The longest a decision waits for the others of its turn: a turn that reads many requests at
// once may run for longer than a decision's deadline leaves.
const MAX_WAIT_MS = 5;

/**
 * Sends the decisions that are ready in the same turn of the event loop as one call of the batch
 * function (see batch.lua), which reads Redis's clock once and decides each in order, exactly as
 * it would alone: what a call costs Redis (parsing, dispatch, the reply, the id of a decision that
 * applies something) and the client (a command, its encoding, its reply) is paid once per batch.
 *
 * Nothing waits for a batch to fill: a decision made while no call is under way goes out at
 * once, alone, as it would unbatched. One made while a call is under way waits for the end of the
 * event loop's turn, in which a server reads every request that has come in (one `setImmediate`
 * per turn), and goes with what else is waiting then; or at once with `maxBatch` decisions, or
 * when the oldest has waited `MAX_WAIT_MS`. Each decision keeps its own arguments (its deadline) and its
 * own reply or error. A batch whose reply was lost is sent again whole, with its id, when one of
 * its decisions is sent again: Redis answers the copy with what it decided the first time, if it
 * ran the batch, and each decision takes its own answer from it.
 *
 * On a cluster, the decisions of one batch share a hash slot, so that the batch goes where a
 * lone decision would, and a slot that moves (MOVED, ASK, TRYAGAIN) moves the batch whole.
 */
export class DecisionBatcher {
  private waiting: Waiting[] = [];
  private readonly bySlot: Map<number, Waiting[]> | undefined;
  private scheduled = false;
  /** Calls sent and not yet answered. */
  private inFlight = 0;
  /** When the oldest decision waiting began to wait (`performance.now()`). */
  private firstWaitingAt = 0;

  /** `clustered`: whether keys of different slots may live on different nodes. */
  constructor(
    private readonly runner: DecisionRunner,
    private readonly memory: LibraryMemory,
    private readonly maxBatch: number,
    clustered: boolean,
  ) {
    if (clustered) this.bySlot = new Map();
  }

  /**
   * Where decisions go out as scripts, runs the batch script once over no decisions, which puts
   * it in the server's cache; resolves whatever happens.
   */
  async warmUp(): Promise<void> {
    if (this.maxBatch <= 1 || this.runner.usesFunctions) return;
    await this.runner.run(BATCH_SCRIPT, [], ['0'], DECISION_LIBRARY.batchFn).catch(() => {});
  }

  /** A decision to send: `keys` are its state keys, `args` as decide.lua takes them. */
  job(script: DecisionScript, keys: readonly string[], args: string[], applies: boolean) {
    return { script, keys, args, applies } as DecisionJob;
  }

  /**
   * Sends `job` and resolves with its own reply, as a lone call would. A job whose last reply was
   * lost goes out as it went then; any other joins the next batch.
   */
  send(job: DecisionJob): Promise<unknown> {
    const lost = job.lost;
    if (lost === 'alone') return this.alone(job);
    if (lost !== undefined) return this.copyOf(job, lost.batch, lost.index);
    // A decision over no keys (the warm-up) has no slot to share. One carrying the caller's clock
    // checks its deadline against its own id key (see `passed` in once.lua).
    if (this.maxBatch <= 1 || job.keys.length === 0 || job.args[1].charCodeAt(0) === 99) {
      return this.alone(job);
    }
    // Nothing under way: Redis is idle, so the decision goes now, as it would unbatched. What
    // follows while it is out waits for the end of the turn.
    if (this.inFlight === 0 && !this.scheduled) return this.alone(job);
    return new Promise((resolve, reject) => {
      const group = this.groupOf(job.keys[0]);
      group.push({ job, resolve, reject });
      if (group.length >= this.maxBatch) {
        this.sendBatch(group.splice(0, group.length));
      } else if (!this.scheduled) {
        this.scheduled = true;
        this.firstWaitingAt = performance.now();
        setImmediate(this.flush);
      } else if (performance.now() - this.firstWaitingAt > MAX_WAIT_MS) {
        // A turn that runs long (a burst of requests read at once) sends what waits meanwhile.
        this.flush();
      }
    });
  }

  private groupOf(key: string): Waiting[] {
    if (this.bySlot === undefined) return this.waiting;
    const slot = keySlot(key);
    let group = this.bySlot.get(slot);
    if (group === undefined) this.bySlot.set(slot, (group = []));
    return group;
  }

  // Called by the turn's `setImmediate`, or earlier by a decision that found the oldest waiting
  // too long; the later call then finds nothing, or what came since.
  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.bySlot === undefined) {
      const batch = this.waiting;
      this.waiting = [];
      if (batch.length > 0) this.sendBatch(batch);
      return;
    }
    for (const group of this.bySlot.values()) if (group.length > 0) this.sendBatch(group);
    this.bySlot.clear();
  };

  private alone(job: DecisionJob): Promise<unknown> {
    let call = job.aloneCall;
    if (call === undefined || call.clock !== job.args[1])
      call = job.aloneCall = this.aloneCallOf(job);
    const copy = job.lost === 'alone';
    const connection = this.memory.connection;
    this.inFlight++;
    const sent =
      call.fn === DECISION_LIBRARY.oneFn
        ? this.runner.callFunction(call.fn, call.keys, call.args).then(
            (reply) =>
              isEpochChanged(reply) ? (this.keyedAgain(job, copy, connection) ?? reply) : reply,
            (error: unknown) => this.withoutLibrary(job, copy, connection, error),
          )
        : this.runner.run(job.script, call.keys, call.args);
    return sent.then(
      (reply) => {
        this.inFlight--;
        job.lost = undefined;
        return reply;
      },
      (error: unknown) => {
        this.inFlight--;
        job.lost = 'alone';
        throw error;
      },
    );
  }

  /**
   * A decision whose function the server does not hold (FUNCTION FLUSH, a restart without
   * persistence): the library's memory went with it. As for one answered under an ended epoch
   * (see keyedAgain), a first sending goes again with an id key, and a copy is answered as sent
   * under an epoch that has ended.
   */
  private withoutLibrary(job: DecisionJob, copy: boolean, connection: number, error: unknown) {
    if (!isNoFunction(error)) throw error;
    const again = this.keyedAgain(job, copy, connection);
    if (again === undefined) throw failsThisDecisionOnly(new StoreEpochError());
    return again;
  }

  /**
   * A decision sent under an epoch found the library's memory begun again, and applied nothing.
   * The epoch is forgotten. Unless the call may have been a copy of one the old memory saw applied
   * (this store's own copy, or the client's, which it sends only on a new connection: one made
   * since `connection`), it never ran anywhere: it goes again as a script with an id key, and its
   * reply is returned. Undefined for a copy, which is answered as sent under an ended epoch.
   */
  private keyedAgain(
    job: DecisionJob,
    copy: boolean,
    connection: number,
  ): Promise<unknown> | undefined {
    const firstSending = !copy && this.memory.connection === connection;
    this.memory.forget();
    if (!firstSending) return undefined;
    const keyed = (job.aloneCall = this.keyedCall(job));
    return this.runner.run(job.script, keyed.keys, keyed.args);
  }

  /**
   * A decision's own call. The usual one (one policy consumed, on Redis's clock or a simulated
   * one) goes to the function that keeps its id in the library's memory, when the epoch of that
   * memory is known; any other that applies something carries an id key.
   */
  private aloneCallOf(job: DecisionJob): AloneCall {
    const { keys, args } = job;
    const clock = args[1];
    if (!job.applies) return { clock, fn: undefined, keys, args };
    const epoch =
      keys.length === 1 && args.length === 3 && args[0] === 'c' && clock.charCodeAt(0) !== 99
        ? this.memory.epoch
        : undefined;
    if (epoch !== undefined) {
      return {
        clock,
        fn: DECISION_LIBRARY.oneFn,
        keys,
        args: [clock, args[2], epoch, DECISION_SENDER, decisionNumber()],
      };
    }
    return this.keyedCall(job);
  }

  /** A decision's own call with its id key last. */
  private keyedCall({ keys, args }: DecisionJob): AloneCall {
    return { clock: args[1], fn: undefined, keys: [...keys, decisionIdKey(keys[0])], args };
  }

  private sendBatch(waiting: readonly Waiting[]): void {
    if (waiting.length === 1) {
      const { job, resolve, reject } = waiting[0];
      this.alone(job).then(resolve, reject);
      return;
    }
    const batch: SentBatch = batchCall(waiting, this.memory.epoch);
    this.run(batch).then(
      (answers) => {
        for (let i = 0; i < waiting.length; i++) settle(waiting[i], answers[i]);
      },
      (error: unknown) => {
        for (let i = 0; i < waiting.length; i++) {
          waiting[i].job.lost = { batch, index: i };
          waiting[i].reject(error);
        }
      },
    );
  }

  /** One copy of a lost batch, whichever of its decisions asks first; another if it fails too. */
  private copyOf(job: DecisionJob, batch: SentBatch, index: number): Promise<unknown> {
    const copy = (batch.copy ??= this.run(batch, true).catch((error: unknown) => {
      batch.copy = undefined;
      throw error;
    }));
    return copy.then((answers) => {
      job.lost = undefined;
      const answer = answers[index];
      if (answer instanceof BatchedDecisionError) throw answer;
      return answer;
    });
  }

  private run(batch: SentBatch, copy = false): Promise<Answers> {
    this.inFlight++;
    const epoch = batch.args[0].endsWith('e') ? batch.args[1] : undefined;
    // As a lone decision's (see keyedAgain): a first sending that finds the memory begun again,
    // or the library gone, goes again with an id key.
    const connection = this.memory.connection;
    const keyedAgain = () => {
      const firstSending = !copy && this.memory.connection === connection;
      this.memory.forget();
      if (!firstSending) return undefined;
      Object.assign(batch, batchCall(batch.waiting, undefined));
      return this.runner.run(BATCH_SCRIPT, batch.keys, batch.args, DECISION_LIBRARY.batchFn);
    };
    const sent =
      epoch === undefined
        ? this.runner.run(BATCH_SCRIPT, batch.keys, batch.args, DECISION_LIBRARY.batchFn)
        : this.runner.callFunction(DECISION_LIBRARY.batchFn, batch.keys, batch.args).then(
            (reply) => (isEpochChanged(reply) ? (keyedAgain() ?? reply) : reply),
            (error: unknown) => {
              if (!isNoFunction(error)) throw error;
              const again = keyedAgain();
              if (again === undefined) throw failsThisDecisionOnly(new StoreEpochError());
              return again;
            },
          );
    return sent.then(
      (reply) => {
        this.inFlight--;
        return answersOf(reply, Number.parseInt(batch.args[0], 10));
      },
      (error: unknown) => {
        this.inFlight--;
        throw error;
      },
    );
  }
}

function settle({ job, resolve, reject }: Waiting, answer: unknown[] | BatchedDecisionError) {
  job.lost = undefined;
  if (answer instanceof BatchedDecisionError) reject(answer);
  else resolve(answer);
}
