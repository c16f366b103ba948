// What the batcher sends and gets back: a decision's job and its own call, a batch's keys and
// arguments as batch.lua takes them, and each decision's part of the batch's reply.
import { type DecisionScript } from './scripts.js';
import { DECISION_SENDER, decisionIdKey, decisionNumber } from './decision-id.js';
import { isEpochChanged } from './library-memory.js';

/** One decision of a batch failed in Redis (the others were decided): the server's message. */
export class BatchedDecisionError extends Error {
  override readonly name = 'BatchedDecisionError';
}

/** A batch as it was sent, so that a copy can be sent exactly so (see `DecisionBatcher.send`). */
export interface SentBatch {
  readonly waiting: readonly Waiting[];
  /** Made again, with an id key, when its first sending finds the library gone. */
  keys: string[];
  args: string[];
  /** The answers of a copy, once one was sent; cleared when it failed. */
  copy?: Promise<Answers>;
}

/** Each decision's reply, or its error, in batch order. */
export type Answers = ReadonlyArray<unknown[] | BatchedDecisionError>;

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
  /** How it goes out alone, made when it first does, and again only if its clock changes. */
  aloneCall?: AloneCall;
  /** Where a copy must go: its own call, or the batch it went in and its place there. */
  lost?: 'alone' | { readonly batch: SentBatch; readonly index: number };
}

/** A decision's own call: the function to FCALL (the script's, when undefined), keys and arguments. */
export interface AloneCall {
  /** The clock argument it was made for. */
  readonly clock: string;
  readonly fn: string | undefined;
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

/** A decision waiting for its turn's batch, and how to answer its caller. */
export interface Waiting {
  readonly job: DecisionJob;
  readonly resolve: (reply: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The batch function's keys and arguments (see batch.lua): when any of its decisions may apply
 * something, the epoch of the library's memory and the batch's id where the epoch is known, else
 * its id key first.
 */
export function batchCall(waiting: readonly Waiting[], epoch: string | undefined): SentBatch {
  let applies = false;
  let keyCount = 0;
  let argCount = 1;
  for (const { job } of waiting) {
    applies ||= job.applies;
    keyCount += job.keys.length;
    argCount += 2 + job.args.length;
  }
  const inMemory = applies && epoch !== undefined;
  const withKey = applies && !inMemory;
  const keys = new Array<string>(keyCount + (withKey ? 1 : 0));
  const args = new Array<string>(argCount + (inMemory ? 3 : 0));
  let k = 0;
  let a = 1;
  if (withKey) keys[k++] = decisionIdKey(waiting[0].job.keys[0]);
  if (inMemory) {
    args[a++] = epoch;
    args[a++] = DECISION_SENDER;
    args[a++] = decisionNumber();
  }
  args[0] = `${waiting.length}${inMemory ? 'e' : withKey ? 'i' : ''}`;
  for (const { job } of waiting) {
    args[a++] = String(job.keys.length);
    args[a++] = String(job.args.length);
    for (const key of job.keys) keys[k++] = key;
    for (const arg of job.args) args[a++] = arg;
  }
  return { waiting, keys, args };
}

/** Each decision's part of the batch's reply (see batch.lua). */
export function answersOf(reply: unknown, count: number): Answers {
  const values = reply as unknown[];
  const answers = new Array<unknown[] | BatchedDecisionError>(count);
  // Sent under an epoch that has ended: each decision answers so, as it would alone.
  if (isEpochChanged(values)) return answers.fill(values);
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
