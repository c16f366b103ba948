import { decisionIdKey } from './decision-id.js';
import { type DecisionRunner } from './decision-runner.js';
import { keySlot } from '../key-slot.js';
import { BATCH_SCRIPT, DECISION_LIBRARY, type DecisionScript } from './scripts.js';

/** One decision of a batch failed in Redis (the others were decided): the server's message. */
export class BatchedDecisionError extends Error {
  override readonly name = 'BatchedDecisionError';
}

// The longest a decision waits for the others of its turn: a turn that reads many requests at
// once may run for longer than a decision's deadline leaves.
const MAX_WAIT_MS = 5;

/** A batch as it was sent, so that a copy can be sent exactly so (see `send`). */
interface SentBatch {
  readonly keys: string[];
  readonly args: string[];
  /** The answers of a copy, once one was sent; cleared when it failed. */
  copy?: Promise<Answers>;
}

/** Each decision's reply, or its error, in batch order. */
type Answers = ReadonlyArray<unknown[] | BatchedDecisionError>;

/**
 * One decision, from its first sending to its last copy: its state keys, its arguments (the
 * store may change its clock between sendings), and how it went out the last time its reply was
 * lost, so that a copy goes out the same way, under the same id.
 */
export interface DecisionJob {
  readonly script: DecisionScript;
  readonly keys: readonly string[];
  readonly args: string[];
  /** Whether it may apply something, and so needs an id that a copy is answered by. */
  readonly applies: boolean;
  /** Its keys when sent alone: its own id key last, made once. */
  aloneKeys?: readonly string[];
  /** Where a copy must go: its own call, or the batch it went in and its place there. */
  lost?: 'alone' | { readonly batch: SentBatch; readonly index: number };
}

interface Waiting {
  readonly job: DecisionJob;
  readonly resolve: (reply: unknown) => void;
  readonly reject: (error: unknown) => void;
}

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
    const keys = (job.aloneKeys ??= job.applies
      ? [...job.keys, decisionIdKey(job.keys[0])]
      : job.keys);
    this.inFlight++;
    return this.runner.run(job.script, keys, job.args).then(
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

  private sendBatch(waiting: readonly Waiting[]): void {
    if (waiting.length === 1) {
      const { job, resolve, reject } = waiting[0];
      this.alone(job).then(resolve, reject);
      return;
    }
    const batch: SentBatch = batchCall(waiting);
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
    const copy = (batch.copy ??= this.run(batch).catch((error: unknown) => {
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

  private run(batch: SentBatch): Promise<Answers> {
    this.inFlight++;
    return this.runner.run(BATCH_SCRIPT, batch.keys, batch.args, DECISION_LIBRARY.batchFn).then(
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

/**
 * The batch function's keys and arguments (see batch.lua): its id key first when any of its
 * decisions may apply something.
 */
function batchCall(waiting: readonly Waiting[]): SentBatch {
  let applies = false;
  let keyCount = 0;
  let argCount = 1;
  for (const { job } of waiting) {
    applies ||= job.applies;
    keyCount += job.keys.length;
    argCount += 2 + job.args.length;
  }
  const keys = new Array<string>(keyCount + (applies ? 1 : 0));
  const args = new Array<string>(argCount);
  let k = 0;
  if (applies) keys[k++] = decisionIdKey(waiting[0].job.keys[0]);
  args[0] = applies ? `${waiting.length}i` : String(waiting.length);
  let a = 1;
  for (const { job } of waiting) {
    args[a++] = String(job.keys.length);
    args[a++] = String(job.args.length);
    for (const key of job.keys) keys[k++] = key;
    for (const arg of job.args) args[a++] = arg;
  }
  return { keys, args };
}

/** Each decision's part of the batch's reply (see batch.lua). */
function answersOf(reply: unknown, count: number): Answers {
  const values = reply as unknown[];
  const answers = new Array<unknown[] | BatchedDecisionError>(count);
  let at = 0;
  for (let d = 0; d < count; d++) {
    const length = Array.isArray(values) ? Number(values[at]) : NaN;
    if (length >= 0 && at + length < values.length) {
      const own = new Array<unknown>(length);
      for (let i = 0; i < length; i++) own[i] = values[at + 1 + i];
      answers[d] = own;
      at += 1 + length;
    } else if (length === -1) {
      answers[d] = new BatchedDecisionError(String(values[at + 1]));
      at += 2;
    } else {
      answers[d] = new BatchedDecisionError(`malformed batch reply at ${at}`);
    }
  }
  return answers;
}
