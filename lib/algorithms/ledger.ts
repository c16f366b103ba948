import { type KeyValues, ms, type PolicyArgs } from './algorithm.js';

/*
 * The twin of `ledger.lua`: the ledgers of the policies that count only some outcomes, where the
 * requests they let through wait for their outcome to be known (see `pending` in `decide.lua`).
 */

/** A ledger's requests by arrival (µs) to their units, as the Redis hash holds them. */
type LedgerState = Map<number, number>;

/** Like `in_flight` in `ledger.lua`: the units in flight, dropping requests too old to matter. */
export function inFlight(key: string, now: number, p: PolicyArgs, values: KeyValues): number {
  const entries = values.get(key) as LedgerState | undefined;
  if (entries === undefined) return 0;
  let units = 0;
  // `horizon` in Lua: a calendar policy's period is already its unit's longest window here.
  const oldest = now - p.periodUs;
  for (const [arrival, held] of entries) {
    if (arrival <= oldest) entries.delete(arrival);
    else units += held;
  }
  return units;
}

/** Like `enter` in `ledger.lua`: counts a request (`units` > 0), or takes it out (< 0). */
export function enter(
  key: string,
  arrival: number,
  units: number,
  p: PolicyArgs,
  values: KeyValues,
): void {
  const entries = (values.get(key) as LedgerState | undefined) ?? new Map<number, number>();
  const held = (entries.get(arrival) ?? 0) + units;
  if (held > 0) entries.set(arrival, held);
  else entries.delete(arrival);
  // Its expiry moves with each request counted, as `PEXPIRE` moves it in Lua.
  if (units > 0) values.set(key, entries, arrival + ms(p.periodUs) * 1000);
}
