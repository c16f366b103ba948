import { randomUUID } from 'node:crypto';
import { type Algorithm } from '../../../lib/algorithms/algorithm.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';

/** A policy as the source articles write one: a period, a threshold, and maybe an algorithm. */
export const policy = (
  period: number | string,
  threshold: number,
  algorithm?: Algorithm,
  burst?: number,
) => resolvePolicy({ period, threshold, algorithm, burst }, 'seed test');

/** A key no other test uses, with its own hash tag. */
export const newKey = () => `seed:{${randomUUID()}}`;
