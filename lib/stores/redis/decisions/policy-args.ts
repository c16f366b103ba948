import { type ResolvedPolicy } from '../../../policy/rate-limit.policy.js';
import { monotonicClock, toMicros } from '../../clock.js';

const wallClockUs = () => toMicros(monotonicClock());

// Each policy's argument up to its cost, and whole for a cost of 1 (the usual one), built once per
// policy: a route's arguments are then the same strings on every call.
const heads = new WeakMap<ResolvedPolicy, string>();
const unitCosts = new WeakMap<ResolvedPolicy, string>();

/** A calendar policy's argument in its current window: built once per window, by the bounds. */
interface CalendarArgs {
  readonly bounds: readonly number[];
  readonly head: string;
  readonly unitCost: string;
}
const calendarArgs = new WeakMap<ResolvedPolicy, CalendarArgs>();

/**
 * A policy as the decision script reads it, one argument: `"<algorithm id> <period µs> <limit>
 * <burst> <lock-out µs> <cost>"` (see `decide.lua`), where a policy that follows the calendar has
 * its six window starts, then its unit's longest window (µs, how long its keys live), joined by
 * commas, in place of the period: the starts around `nowUs()`, the store's estimate of Redis's
 * clock, read only for such a policy. `blockUs` stands in for the policy's lock-out.
 */
export function policyArg(
  policy: ResolvedPolicy,
  cost: number,
  blockUs?: number,
  nowUs: () => number = wallClockUs,
): string {
  if (policy.calendar !== undefined) return calendarArg(policy, cost, blockUs, nowUs());
  if (blockUs !== undefined && blockUs !== policy.blockUs) {
    return `${headOf(policy, policy.periodUs, blockUs)}${cost}`;
  }
  if (cost === 1) {
    let arg = unitCosts.get(policy);
    if (arg === undefined) {
      unitCosts.set(policy, (arg = `${headOf(policy, policy.periodUs, policy.blockUs)}1`));
    }
    return arg;
  }
  let head = heads.get(policy);
  if (head === undefined)
    heads.set(policy, (head = headOf(policy, policy.periodUs, policy.blockUs)));
  return `${head}${cost}`;
}

function calendarArg(
  policy: ResolvedPolicy,
  cost: number,
  blockUs: number | undefined,
  nowUs: number,
): string {
  // The same array while now stays in its window: the strings are built again only past its end.
  const bounds = policy.calendar!.bounds(nowUs);
  if (blockUs !== undefined && blockUs !== policy.blockUs) {
    return `${headOf(policy, windowsArg(policy, bounds), blockUs)}${cost}`;
  }
  let args = calendarArgs.get(policy);
  if (args === undefined || args.bounds !== bounds) {
    const head = headOf(policy, windowsArg(policy, bounds), policy.blockUs);
    args = { bounds, head, unitCost: `${head}1` };
    calendarArgs.set(policy, args);
  }
  return cost === 1 ? args.unitCost : `${args.head}${cost}`;
}

/** The six starts, then the longest window: a calendar policy's `periodUs`. */
function windowsArg(policy: ResolvedPolicy, bounds: readonly number[]): string {
  return `${bounds.join(',')},${policy.periodUs}`;
}

function headOf(p: ResolvedPolicy, period: number | string, blockUs: number): string {
  return `${p.code} ${period} ${p.threshold} ${p.burst} ${blockUs} `;
}
