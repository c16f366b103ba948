import { type DiscoveryService, type MetadataScanner } from '@nestjs/core';
import { type Algorithm } from '../algorithms/algorithm.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { configError } from '../policy/validation.js';
import { nearestField } from '../policy/known-fields.js';
import { RATE_LIMIT_POLICY } from '../rate-limit.constants.js';
import { type PolicyTemplate } from '../templates/policy-template.js';

/** What is known of one policy of a name: its algorithm, and its values when they are fixed. */
export interface KnownPolicy {
  readonly algorithm: Algorithm;
  readonly fixed?: ResolvedPolicy;
}

// Names come from code, so they are few; the bound only stops a service caller that builds a new
// default name (`<threshold>-per-<period>`) for every call from filling memory.
const MAX_NAMES = 1000;
const MAX_PER_NAME = 16;
const SHOWN = 12;

/**
 * The policy names this instance can apply an override to: every `@RateLimit` policy whose name
 * is known before a request (given, or derived from fixed values) on the application's
 * controllers, resolvers and gateways, found at bootstrap, and every policy `RateLimitService`
 * has resolved since.
 */
export class KnownPolicies {
  private readonly byName = new Map<string, KnownPolicy[]>();

  /** Reads the `@RateLimit` metadata of every class method and class Nest knows. */
  scan(discovery: DiscoveryService, scanner: MetadataScanner): void {
    const wrappers = [...discovery.getControllers(), ...discovery.getProviders()];
    for (const { metatype } of wrappers) {
      if (typeof metatype !== 'function' || metatype.prototype === undefined) continue;
      this.noteTemplates(Reflect.getMetadata(RATE_LIMIT_POLICY, metatype));
      const prototype = metatype.prototype as Record<string, unknown>;
      for (const method of scanner.getAllMethodNames(prototype)) {
        const handler = prototype[method];
        if (typeof handler === 'function') {
          this.noteTemplates(Reflect.getMetadata(RATE_LIMIT_POLICY, handler));
        }
      }
    }
  }

  /** Notes the policies a service call resolved. */
  notePolicies(policies: readonly ResolvedPolicy[]): void {
    for (const p of policies) this.note(p.name, { algorithm: p.algorithm, fixed: p });
  }

  get(name: string): readonly KnownPolicy[] | undefined {
    return this.byName.get(name);
  }

  /** The error for a name no known policy has, listing the known ones and the closest. */
  unknown(name: unknown, where: string): Error {
    const names = [...this.byName.keys()].sort();
    if (names.length === 0) {
      return configError(where, 'policyName', name, 'the name of a policy, and none is known yet');
    }
    const close = typeof name === 'string' ? nearestField(name, names) : undefined;
    const shown = names.slice(0, SHOWN).join(', ') + (names.length > SHOWN ? ', …' : '');
    const hint = close !== undefined ? `did you mean "${close}"? ` : '';
    return configError(
      where,
      'policyName',
      name,
      `the name of a known policy (${hint}known: ${shown})`,
    );
  }

  private noteTemplates(templates: unknown): void {
    if (!Array.isArray(templates)) return;
    for (const t of templates as PolicyTemplate[]) {
      if (t.name !== undefined) this.note(t.name, { algorithm: t.algorithm, fixed: t.fixed });
    }
  }

  private note(name: string, policy: KnownPolicy): void {
    let list = this.byName.get(name);
    if (list === undefined) {
      if (this.byName.size >= MAX_NAMES) return;
      list = [];
      this.byName.set(name, list);
    }
    const seen = list.some((k) =>
      policy.fixed === undefined ? k.algorithm === policy.algorithm : k.fixed === policy.fixed,
    );
    if (!seen && list.length < MAX_PER_NAME) list.push(policy);
  }
}
