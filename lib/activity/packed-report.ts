import { type ActivityReport } from './activity-exchange.js';
import { type TopEntry } from './top-k.js';

/**
 * A report as it is stored for the other instances: short field names, each route and policy
 * written once rather than in every entry's key, and times within the minute. A report is read
 * up to 16 times a poll per instance, so its size is what a page costs Redis.
 */
interface PackedReport {
  /** instance, minute, what an unseen key may have had */
  i: string;
  m: number;
  u: number;
  /** The heads of the entries' keys (route and policy), each once. */
  s: string[];
  /** Per entry: its head's index in `s` (-1: none), the rest of its key, count, error, and
   * when last counted, in ms from the minute's start. */
  e: Array<[number, string, number, number, number]>;
  c: ActivityReport['counts'];
  r?: ActivityReport['routes'];
}

const MINUTE_MS = 60_000;
// Where an entry's key splits: its head (see `LimitedTrackers.subject`) ends with a NUL.
const HEAD_END = '\u0000';

export function packReport(report: ActivityReport): string {
  const start = report.minute * MINUTE_MS;
  const heads = new Map<string, number>();
  const e = report.top.entries.map(({ key, count, error, last }): PackedReport['e'][number] => {
    const end = key.indexOf(HEAD_END);
    if (end < 0) return [-1, key, count, error, last - start];
    const head = key.slice(0, end + 1);
    let index = heads.get(head);
    if (index === undefined) heads.set(head, (index = heads.size));
    return [index, key.slice(end + 1), count, error, last - start];
  });
  const packed: PackedReport = {
    i: report.instance,
    m: report.minute,
    u: report.top.unseenAtMost,
    s: [...heads.keys()],
    e,
    c: report.counts,
    ...(report.routes === undefined ? {} : { r: report.routes }),
  };
  return JSON.stringify(packed);
}

/** A report as {@link packReport} wrote it; undefined for a value this version cannot read. */
export function unpackReport(value: unknown): ActivityReport | undefined {
  let packed: PackedReport;
  try {
    packed = JSON.parse(String(value)) as PackedReport;
  } catch {
    return undefined;
  }
  const fits =
    typeof packed === 'object' &&
    packed !== null &&
    typeof packed.i === 'string' &&
    Number.isInteger(packed.m) &&
    typeof packed.u === 'number' &&
    Array.isArray(packed.s) &&
    Array.isArray(packed.e) &&
    typeof packed.c === 'object' &&
    packed.c !== null &&
    (packed.r === undefined || Array.isArray(packed.r));
  if (!fits) return undefined;
  const start = packed.m * MINUTE_MS;
  const entries: TopEntry[] = [];
  for (const entry of packed.e) {
    if (!Array.isArray(entry) || entry.length !== 5) return undefined;
    const [head, rest, count, error, last] = entry;
    const key = head < 0 ? rest : packed.s[head] + rest;
    entries.push({ key, count, error, last: start + last });
  }
  return {
    instance: packed.i,
    minute: packed.m,
    top: { entries, unseenAtMost: packed.u },
    counts: packed.c,
    ...(packed.r === undefined ? {} : { routes: packed.r }),
  };
}
