/** Reports of the console's activity, as instances share them, for the exchange's tests. */
import { type ActivityReport } from '../../lib/activity/activity-exchange.js';

/** A report of `instance` for `minute`, one tracker turned away `limited` times. */
export function reportOf(instance: string, minute: number, limited: number): ActivityReport {
  return {
    instance,
    minute,
    top: {
      entries: [{ key: `["GET /a","api"]\u0000ip:${instance}`, count: limited, error: 0, last: 1 }],
      unseenAtMost: 0,
    },
    counts: { 'GET /a': [limited, limited, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] },
    routes: [{ route: 'GET /a', keys: [] }],
  };
}
