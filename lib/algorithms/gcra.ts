import { type AlgorithmTwin, MAX_DEBT_US, ms, NEVER, type Params, us } from './algorithm.js';

const interval = (p: Params) => Math.ceil(p.periodUs / p.limit);

/** Twin of `gcra.lua`. The state is the theoretical arrival time (µs); all arithmetic is integer. */
export const gcra: AlgorithmTwin<number, number> = {
  check(stored, now, p, aheadUs) {
    const tat = Math.max(stored ?? now, now);
    if (p.cost > p.burst) return { allowed: false, retryAfterUs: NEVER, work: tat };
    const over = tat + p.cost * interval(p) - now - p.burst * interval(p);
    if (over <= 0) return { allowed: true, retryAfterUs: 0, work: tat };
    const allowed = aheadUs !== undefined && over <= aheadUs;
    return { allowed, retryAfterUs: us(over), work: tat };
  },

  after(now, p, tat) {
    const newTat = tat + p.cost * interval(p);
    return {
      remaining: Math.max(0, Math.floor((p.burst * interval(p) - (newTat - now)) / interval(p))),
      resetAfterMs: ms(newTat - now),
    };
  },

  commit(_stored, now, p, tat) {
    const outcome = gcra.after(now, p, tat);
    return {
      state: tat + p.cost * interval(p),
      expiresAtUs: now + outcome.resetAfterMs * 1000,
      ...outcome,
    };
  },

  refund(stored, now, p) {
    const tat = Math.max(stored ?? now, now);
    const newTat = Math.max(tat - p.cost * interval(p), now);
    if (newTat <= now) return undefined;
    return { state: newTat, expiresAtUs: now + ms(newTat - now) * 1000 };
  },

  charge(stored, now, p) {
    const tat = Math.max(stored ?? now, now);
    const newTat = Math.min(tat + p.cost * interval(p), now + p.burst * interval(p) + MAX_DEBT_US);
    return { state: newTat, expiresAtUs: now + ms(newTat - now) * 1000 };
  },

  status(_stored, now, p, tat) {
    const remaining = Math.max(0, Math.floor((p.burst * interval(p) - (tat - now)) / interval(p)));
    return { remaining, resetAfterMs: ms(tat - now) };
  },
};
