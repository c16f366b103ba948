import { type EncodedCall, keysOf, opArg } from '../../call-encoding.js';
import { decisionFromReply } from '../../decision.js';
import { type Limits } from '../../../store-contract/store-call.js';
import { type RateLimitDecision } from '../../../store-contract/store.interface.js';
import {
  callsOwnError,
  failsThisDecisionOnly,
  withLateOutcome,
} from '../../resilience/store-failure.js';
import { StoreLateError } from '../answer-deadline.js';
import { TIME_REFUSED } from '../caller-clock.js';
import { type ScriptClient } from '../clients/script-client.js';
import { type ReconnectWaiters, replyIfRun, sendResending } from '../lost-replies.js';
import { isMovingSlot, retryWhileSlotMoves } from '../moving-slot.js';
import { type RedisTime } from '../redis-time.js';
import { type DecisionBatcher } from './decision-batcher.js';
import { EPOCH_CHANGED, type LibraryMemory, StoreEpochError } from './library-memory.js';
import { policyArg } from './policy-args.js';
import { scriptFor } from './scripts.js';

// With no deadline, Redis keeps a decision's id for 5 s (see decide.lua): a copy sent later
// could apply again, so resending stops well before.
const RESEND_WITHOUT_DEADLINE_MS = 4000;

/**
 * Sends one decision to Redis and reads its reply: the script's arguments, the batch it joins,
 * the copies sent again while its caller waits (a reply lost with its connection, a cluster slot
 * that moves), a clock Redis refused, and what a failure may yet learn (see `withLateOutcome`).
 */
export class DecisionSender {
  constructor(
    private readonly scripts: ScriptClient,
    private readonly batcher: DecisionBatcher,
    private readonly time: RedisTime,
    private readonly reconnected: ReconnectWaiters,
    private readonly memory: LibraryMemory,
    /** What a decision fails with while the client is not connected. */
    private readonly notConnected: () => Error,
  ) {}

  /**
   * Runs the decision: `op` and its `at` are its first argument (see `decide.lua`). A correction
   * (a give-back nobody waits for) carries no deadline.
   */
  async send(limits: Limits, encoded: EncodedCall, correction?: true): Promise<RateLimitDecision> {
    if (!this.scripts.ready()) {
      // A correction waits for the client to be back, as a resend does; a decision cannot.
      const until = performance.now() + RESEND_WITHOUT_DEADLINE_MS;
      if (!correction || !(await this.reconnected.ready(until))) throw this.notConnected();
    }
    // Only where Redis refuses TIME in scripts: its clock is read once per connection.
    const { callerClock } = this.time;
    if (callerClock.inUse) await callerClock.fresh();
    const { keys, policies } = limits;
    const n = keys.length;
    const sentAt = performance.now();
    const args = this.argsOf(limits, encoded, sentAt, correction);
    // A decision that applies something carries an id (its own, or its batch's), so that no copy
    // of it applies again.
    const allKeys = keysOf(keys, limits.ledgers, encoded);
    const job = this.batcher.job(scriptFor(policies), allKeys, args, encoded.applies && n > 0);
    // A copy is sent only while its caller still waits; a correction has no caller.
    const untilMs =
      sentAt + ((correction ? undefined : this.time.timeoutMs) ?? RESEND_WITHOUT_DEADLINE_MS);
    const run = () => this.batcher.send(job);
    const resend = () => sendResending(run, this.reconnected, untilMs) as Promise<number[]>;
    // Only a cluster refuses a decision because its slot is moving: it is tried again meanwhile.
    const send =
      this.scripts.nodeOf !== undefined
        ? () => resend().catch((error: unknown) => retryWhileSlotMoves(error, untilMs, resend))
        : resend;
    let reply: number[];
    try {
      reply = await send();
      if (reply[0] === TIME_REFUSED) {
        // Nothing was applied: the same decision goes again, carrying the time itself.
        await callerClock.adopt();
        args[1] = this.time.arg(sentAt, correction);
        reply = await send();
      }
    } catch (error) {
      // The fallback answers it; if Redis ran it meanwhile, the error says so once it can tell.
      const deadlineSent = !correction && this.time.hasDeadline && /\d$/.test(args[1]);
      if (deadlineSent && (encoded.op === 'c' || encoded.op === 'w')) {
        const reply = replyIfRun(error, run, this.reconnected, untilMs);
        if (reply !== undefined) {
          withLateOutcome(
            error,
            reply
              .then((r) => (r === undefined ? undefined : decisionFromReply(r, policies)))
              .catch(() => undefined),
          );
        }
      }
      // The slot still moving when its caller stops waiting: the decision's trouble, not its server's.
      throw isMovingSlot(error) ? failsThisDecisionOnly(error) : error;
    }
    if (reply[0] === -1) {
      this.time.observe(reply[1]);
      throw new StoreLateError();
    }
    if (reply[0] === EPOCH_CHANGED) {
      // The server's memory began again; not a failure of the server, which answered.
      this.memory.forget();
      throw failsThisDecisionOnly(new StoreEpochError());
    }
    // After the policies' answers: the time, then the lease id if one was taken.
    const at = 1 + 4 * n;
    try {
      this.time.observe(reply[at]);
      return decisionFromReply(
        reply,
        policies,
        encoded.op === 'w' ? this.time.offsetUs() : undefined,
      );
    } catch (error) {
      throw callsOwnError(error, "read Redis's reply");
    }
  }

  /**
   * The decision's arguments: the operation, the clock, then each policy (a calendar's window
   * starts computed here). What fails here is the call's own error, not Redis's.
   */
  private argsOf(
    { policies, costs: callCosts }: Limits,
    encoded: EncodedCall,
    sentAt: number,
    correction?: true,
  ): string[] {
    try {
      const costs = encoded.costs ?? callCosts;
      const args = new Array<string>(2 + policies.length);
      args[0] = opArg(encoded);
      args[1] = this.time.arg(sentAt, correction);
      for (let i = 0; i < policies.length; i++) {
        args[2 + i] = policyArg(policies[i], costs[i], encoded.blockUs, this.time.nowUs);
      }
      return args;
    } catch (error) {
      throw callsOwnError(error, 'build the decision');
    }
  }
}
