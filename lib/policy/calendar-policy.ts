import { type Algorithm } from '../algorithms/algorithm.js';
import { algorithmOf, REGISTRY } from '../algorithms/registry.js';
import {
  calendarWindow,
  type CalendarWindow,
  checkCalendar,
  checkTimeZone,
  parseAnchor,
} from './calendar-window.js';
import { type RateLimitPolicy } from './declared-policy.js';
import { configError, valueOr } from './validation.js';

/**
 * The calendar windows of a policy with `calendar`, checked with `timeZone` and `anchor`; undefined
 * without. `anchor` must be a value by now (a route's function was called already).
 */
export function resolveCalendar(
  policy: RateLimitPolicy<unknown> | undefined,
  algorithm: Algorithm,
  where: string,
): CalendarWindow | undefined {
  if (policy?.calendar === undefined) {
    for (const field of ['timeZone', 'anchor'] as const) {
      if (policy?.[field] !== undefined) {
        throw configError(where, field, policy[field], 'given only with calendar');
      }
    }
    return undefined;
  }
  const unit = checkCalendar(policy.calendar, where);
  if (!algorithmOf(algorithm).followsCalendar) {
    const takers = REGISTRY.filter((e) => e.followsCalendar).map((e) => e.name);
    throw configError(
      where,
      'calendar',
      unit,
      `omitted for ${algorithm} (only ${takers.join(' and ')} count in calendar windows)`,
    );
  }
  if (policy.period !== undefined) {
    throw configError(
      where,
      'period',
      policy.period,
      'omitted with calendar, which sets the window',
    );
  }
  const timeZone = checkTimeZone(valueOr(policy.timeZone, 'UTC'), where);
  const anchor =
    policy.anchor === undefined ? undefined : parseAnchor(policy.anchor, where, timeZone);
  return calendarWindow(unit, timeZone, anchor);
}
