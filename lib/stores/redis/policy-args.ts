import { type ResolvedPolicy } from '../../policy/rate-limit.policy.js';

// Each policy's argument up to its cost, and whole for a cost of 1 (the usual one), built once per
// policy: a route's arguments are then the same strings on every call.
const heads = new WeakMap<ResolvedPolicy, string>();
const unitCosts = new WeakMap<ResolvedPolicy, string>();

/**
 * A policy as the decision script reads it, one argument: `"<algorithm id> <period µs> <limit>
 * <burst> <lock-out µs> <cost>"` (see `decide.lua`). `blockUs` stands in for the policy's lock-out.
 */
export function policyArg(policy: ResolvedPolicy, cost: number, blockUs?: number): string {
  if (blockUs !== undefined && blockUs !== policy.blockUs) {
    return `${headOf(policy, blockUs)}${cost}`;
  }
  if (cost === 1) {
    let arg = unitCosts.get(policy);
    if (arg === undefined) unitCosts.set(policy, (arg = `${headOf(policy, policy.blockUs)}1`));
    return arg;
  }
  let head = heads.get(policy);
  if (head === undefined) heads.set(policy, (head = headOf(policy, policy.blockUs)));
  return `${head}${cost}`;
}

function headOf(p: ResolvedPolicy, blockUs: number): string {
  return `${p.code} ${p.periodUs} ${p.threshold} ${p.burst} ${blockUs} `;
}
