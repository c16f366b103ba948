import { type Operation } from '../algorithms/decide.js';
import { arrivalOf, leaseOf } from './decision.js';
import { type Limits, type StoreCall } from '../store-contract/store-call.js';

/**
 * A store call as the decision reads it, in `decide.lua` (its first argument, and the policies'
 * lock-outs and costs) and in its memory twin, `decide()` in `algorithms/decide.ts`: the one place
 * where calls become operation letters, so the two stores cannot spell them differently.
 */
export interface EncodedCall {
  /**
   * The operation's letter: consume, peek, refund, reset (x), block, reserve (w), release a lease
   * (l), renew it (n), settle a reservation (s).
   */
  readonly op: Operation;
  /**
   * What follows the letter: the arrival time (µs of the store's clock) of the request a refund
   * gives back or a settlement settles, when its decision says; a reservation's longest wait (µs);
   * the lease id freed or renewed.
   */
  readonly at: number | undefined;
  /** Every policy's lock-out for this call, in µs, in place of its own: a block's length. */
  readonly blockUs: number | undefined;
  /** The costs to send in place of the call's: a block locks out whatever a request costs. */
  readonly costs: readonly number[] | undefined;
  /**
   * Whether it changes something a copy of it would change again, and so carries a decision id
   * (see `decide.lua`): a consume, reserve, refund, settlement, block or reset. A peek changes
   * nothing, and a release or renewal done twice leaves what once does.
   */
  readonly applies: boolean;
  /**
   * Per policy, the units entered into its ledger (a consume or reserve) or taken out (a refund),
   * 0 for a policy without one; undefined when the call has no ledgers.
   */
  readonly ledgerUnits?: readonly number[];
}

// Built once: the calls that need nothing beside their letter (the usual consume among them)
// cost no allocation to encode.
const plain = (op: Operation, applies: boolean): EncodedCall =>
  Object.freeze({ op, at: undefined, blockUs: undefined, costs: undefined, applies });
const CONSUME = plain('c', true);
const PEEK = plain('p', false);
const RESET = plain('x', true);
const REFUND_NEWEST = plain('r', true);

/**
 * What the decision is told to do for `call`; undefined when there is nothing to do: a release
 * or renewal of a decision that took no lease.
 */
export function encodeCall(call: StoreCall): EncodedCall | undefined {
  const encoded = encodeOperation(call);
  const ledgers = call.limits.ledgers;
  if (encoded === undefined || ledgers === undefined) return encoded;
  const units =
    call.op === 'consume' || call.op === 'reserve'
      ? call.limits.costs
      : call.op === 'refund'
        ? call.counted
        : undefined;
  if (units === undefined) return encoded;
  const ledgerUnits = ledgers.map((key, i) => (key === undefined ? 0 : units[i]));
  return ledgerUnits.some((u) => u !== 0) ? { ...encoded, ledgerUnits } : encoded;
}

/** The keys the decision reads: the policies', then the ledger of each policy with units. */
export function keysOf(keys: readonly string[], ledgers: Limits['ledgers'], encoded: EncodedCall) {
  const units = encoded.ledgerUnits;
  if (units === undefined) return keys;
  const all = [...keys];
  units.forEach((u, i) => {
    if (u !== 0) all.push(ledgers![i]!);
  });
  return all;
}

function encodeOperation(call: StoreCall): EncodedCall | undefined {
  switch (call.op) {
    case 'consume':
      return CONSUME;
    case 'peek':
      return PEEK;
    case 'reset':
      return RESET;
    case 'refund': {
      const at = call.of === undefined ? undefined : arrivalOf(call.of);
      return at === undefined ? REFUND_NEWEST : { ...REFUND_NEWEST, at };
    }
    case 'block': {
      const blockUs = (call.durationMs ?? 0) * 1000;
      const costs = call.limits.policies.map(() => 1);
      return { op: 'b', at: undefined, blockUs, costs, applies: true };
    }
    case 'reserve': {
      const at = Math.max(0, Math.floor((call.maxWaitMs ?? 0) * 1000));
      return { op: 'w', at, blockUs: undefined, costs: undefined, applies: true };
    }
    case 'settle':
      // Signed costs: charged beyond the estimate, or given back, where `of` was counted.
      return {
        op: 's',
        at: arrivalOf(call.of!),
        blockUs: undefined,
        costs: undefined,
        applies: true,
      };
    case 'release':
    case 'renew': {
      const lease = leaseOf(call.of!);
      if (lease === undefined) return undefined;
      const op = call.op === 'release' ? 'l' : 'n';
      return { op, at: lease, blockUs: undefined, costs: undefined, applies: false };
    }
  }
}

/** The operation as `decide.lua` takes it, one argument: its letter, then its `at` if any. */
export function opArg(encoded: EncodedCall): string {
  const op = encoded.at === undefined ? encoded.op : `${encoded.op}${encoded.at}`;
  return encoded.ledgerUnits === undefined ? op : `${op};${encoded.ledgerUnits.join(',')}`;
}
