/** What the breaker does with calls: all go through, none do, or one probe does. */
export type BreakerState = 'closed' | 'open' | 'half_open';

/** A change of a server's health: its breaker's new state, or an outage's start or end. */
export type HealthChange = BreakerState | 'degraded' | 'recovered';
