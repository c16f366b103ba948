/** The HTTP section's rows (measured by bench/http/), as a table with a ratio per adapter. */
import { integer, ms, ratio, table } from './markdown.js';

export interface HttpRow {
  readonly adapter: 'express' | 'fastify';
  readonly config: string;
  readonly reqPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  /** Our decisions answered from memory because Redis was late: must be 0. */
  readonly degradedDecisions?: number;
}

const BASELINE = 'no limiter';

/** Requests/s of `config` over those of `other` on the same adapter; NaN if either is absent. */
export function httpRatioBetween(
  rows: readonly HttpRow[],
  adapter: string,
  config: string,
  other: string,
) {
  const find = (name: string) =>
    rows.find((r) => r.adapter === adapter && r.config.toLowerCase() === name.toLowerCase());
  const row = find(config);
  const base = find(other);
  return row && base ? row.reqPerSec / base.reqPerSec : NaN;
}

/** Requests/s of `config` over the same adapter's run without a limiter; NaN if either is absent. */
export const ratioToNoLimiter = (rows: readonly HttpRow[], adapter: string, config: string) =>
  httpRatioBetween(rows, adapter, config, BASELINE);

export function renderHttpRows(rows: readonly HttpRow[], note: string | undefined): string {
  const body = rows.map((r) => [
    r.adapter,
    r.config,
    integer(r.reqPerSec),
    ms(r.p50Ms),
    ms(r.p99Ms),
    ratio(ratioToNoLimiter(rows, r.adapter, r.config)),
    integer(r.non2xx),
    r.degradedDecisions === undefined ? '—' : integer(r.degradedDecisions),
  ]);
  return [
    '## HTTP: requests per second through a Nest app',
    '',
    ...(note ? [note, ''] : []),
    table(
      [
        'adapter',
        'configuration',
        'req/s',
        'p50 ms',
        'p99 ms',
        'vs no limiter',
        'non-2xx',
        'degraded',
      ],
      body,
    ),
  ].join('\n');
}
