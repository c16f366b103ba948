import { anyHoldsLeases } from '../algorithms/registry.js';
import { compileTemplates } from '../templates/policy-template.js';
import { ROUTE_POLICY_FIELDS, type RoutePolicy } from '../templates/route-policy.js';
import {
  POLICY_FIELDS,
  type RateLimitPolicy,
  type ResolvedPolicy,
} from '../policy/rate-limit.policy.js';
import { configError } from '../policy/validation.js';
import { checkFields, knownFields } from '../policy/known-fields.js';

/** What `RateLimitService` needs of a policy (or list of them), validated once. */
export interface Compiled {
  readonly policies: readonly ResolvedPolicy[];
  readonly costs: readonly number[];
  /** Whether a policy hands out concurrency leases. */
  readonly leases: boolean;
}

type Input = RateLimitPolicy | readonly RateLimitPolicy[];

// A field only routes take is a mistake here, and the message says so.
const SERVICE_FIELDS = knownFields(POLICY_FIELDS, {
  ...Object.fromEntries(
    Object.keys(ROUTE_POLICY_FIELDS)
      .filter((field) => !Object.hasOwn(POLICY_FIELDS, field))
      .map((field) => [field, `${field} applies only to @RateLimit routes`]),
  ),
  maxWait:
    'maxWait on a policy applies only to @RateLimit routes; pass it to acquire() or run() as an option',
});

// Distinct policies an application writes inline are few; the bound only stops a caller that
// builds a new threshold for every call from filling memory.
const MAX_SHAPES = 1000;
// Literals compared field by field before a shape key is built: enough for the few call sites
// of a hot path, few enough that a miss costs little.
const RECENT = 8;

/** A literal seen lately: its fields and values as they were, and what they compiled to. */
interface Recent {
  readonly fields: Readonly<Record<string, unknown>>;
  readonly size: number;
  readonly compiled: Compiled;
}

/**
 * Compiles the policies `RateLimitService` is given, once per object and once per shape. The same
 * object (a hoisted constant) is found by identity; a new literal with the same fields and values,
 * as written inline at a call site, is found by a key built from its fields, so that neither is
 * validated again. A policy that fails validation is never cached.
 */
export class PolicyCache {
  private readonly byObject = new WeakMap<object, Compiled>();
  private readonly byShape = new Map<string, Compiled>();
  private readonly recent: Recent[] = [];
  private nextRecent = 0;

  /** `compiled` hears of each policy list validated anew (the known policy names). */
  constructor(private readonly compiled?: (policies: readonly ResolvedPolicy[]) => void) {}

  get(policy: Input, where: string): Compiled {
    const isObject = typeof policy === 'object' && policy !== null;
    let compiled = isObject ? this.byObject.get(policy) : undefined;
    if (compiled !== undefined) return compiled;
    // A literal like one seen lately, compared in place: building its shape key costs more than
    // the memory store's whole decision.
    if (isObject && !Array.isArray(policy)) {
      for (const seen of this.recent) {
        if (sameFields(policy, seen)) return seen.compiled;
      }
    }
    const shape = isObject ? shapeOf(policy) : undefined;
    compiled = shape === undefined ? undefined : this.byShape.get(shape);
    if (compiled === undefined) {
      compiled = compile(policy, where);
      this.compiled?.(compiled.policies);
      if (isObject) this.byObject.set(policy, compiled);
      if (shape !== undefined) {
        if (this.byShape.size >= MAX_SHAPES) this.byShape.clear();
        this.byShape.set(shape, compiled);
      }
    }
    if (shape !== undefined && !Array.isArray(policy)) this.remember(policy, compiled);
    return compiled;
  }

  private remember(policy: object, compiled: Compiled): void {
    const fields = { ...policy } as Record<string, unknown>;
    const entry = { fields, size: Object.keys(fields).length, compiled };
    if (this.recent.length < RECENT) this.recent.push(entry);
    else this.recent[this.nextRecent] = entry;
    this.nextRecent = (this.nextRecent + 1) % RECENT;
  }
}

/**
 * Whether `policy` has exactly the fields of `seen`, with the same values. Only literals whose
 * values are all plain (see {@link shapeOf}) are remembered, so `===` compares them by value.
 */
function sameFields(policy: object, seen: Recent): boolean {
  let size = 0;
  for (const field in policy) {
    const value = (policy as Record<string, unknown>)[field];
    if (value !== seen.fields[field] || (value === undefined && !(field in seen.fields))) {
      return false;
    }
    size++;
  }
  return size === seen.size;
}

/**
 * Every own field and its value, typed (`60` and `'60'` differ), or undefined when a value is not
 * a plain number, string or boolean: such a policy is cached by identity only.
 */
function shapeOf(policy: object): string | undefined {
  if (Array.isArray(policy)) {
    let shape = '[';
    for (const item of policy as unknown[]) {
      const one = typeof item === 'object' && item !== null ? shapeOf(item) : undefined;
      if (one === undefined) return undefined;
      shape += one + '\u0001';
    }
    return shape;
  }
  let shape = '';
  for (const field in policy) {
    const value = (policy as Record<string, unknown>)[field];
    const type = typeof value;
    if (type === 'number' || type === 'string' || type === 'boolean' || type === 'undefined') {
      shape += `${field}\u0002${type[0]}${String(value)}\u0003`;
    } else {
      return undefined;
    }
  }
  return shape;
}

function compile(policy: Input, where: string): Compiled {
  // Checked here, on a miss only: a policy with a field it does not know is never cached.
  for (const item of Array.isArray(policy) ? policy : [policy]) {
    if (typeof item === 'object' && item !== null) checkFields(item, SERVICE_FIELDS, where);
  }
  const templates = compileTemplates(policy as RoutePolicy | readonly RoutePolicy[], where);
  if (templates.some((t) => t.fixed === undefined || typeof t.cost !== 'number')) {
    throw configError(
      where,
      'policy',
      'a function',
      'plain values: there is no request context here',
    );
  }
  return {
    policies: templates.map((t) => t.fixed!),
    costs: templates.map((t) => t.cost as number),
    leases: anyHoldsLeases(templates),
  };
}
