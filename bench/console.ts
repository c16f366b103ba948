/**
 * What the console costs a route's decision: `RateLimitGuard.canActivate` on an HTTP handler,
 * called in process on the memory store (where nothing hides the cost), without the console and
 * with it imported, allowed and turned away. Side by side in rotated rounds, medians of the
 * per-round ratios to the row without the console.
 */
import 'reflect-metadata';
import { Controller, type DynamicModule, Get, type INestApplication } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { Test } from '@nestjs/testing';
import { RateLimit, RateLimitGuard, RateLimitModule } from '../lib/index.js';
import { RateLimitConsoleModule } from '../lib/console/index.js';
import { measureSharing } from './console-sharing.js';
import { type BenchContext } from './support/bench-context.js';
import { ratio, table } from './support/markdown.js';
import {
  SIDE_BY_SIDE_KEY_LIST as KEYS,
  sideBySide,
  sideBySideCells,
} from './support/side-by-side.js';

type RowId =
  'without' | 'with' | 'without, flood' | 'with, flood' | 'without, spread' | 'with, spread';
const ROWS: readonly RowId[] = [
  'without',
  'with',
  'without, flood',
  'with, flood',
  'without, spread',
  'with, spread',
];
const LABELS: Record<RowId, string> = {
  without: 'no console, allowed (10,000 trackers)',
  with: 'console imported, allowed (10,000 trackers)',
  'without, flood': 'no console, turned away (a flood from 10 trackers)',
  'with, flood': 'console imported, turned away (a flood from 10 trackers)',
  'without, spread': 'no console, turned away (10,000 trackers)',
  'with, spread': 'console imported, turned away (10,000 trackers)',
};
/** The row each row is held against: the same outcome without the console. */
const baseOf = (id: RowId): RowId => id.replace(/^with(?!out)/, 'without') as RowId;
/** How many trackers a row's requests come from. */
const trackersOf = (id: RowId) => (id.endsWith('flood') ? 10 : KEYS.length);

@Controller('bench')
class BenchController {
  @RateLimit({ algorithm: 'fixed-window', period: 60, threshold: 1_000_000_000 })
  @Get('open')
  open() {}

  @RateLimit({ algorithm: 'fixed-window', period: 60, threshold: 1 })
  @Get('closed')
  closed() {}
}

export interface ConsoleResult {
  readonly markdown: string;
  /** Decisions/s with the console imported, against without: allowed, a flood, spread rejections. */
  readonly allowedRatio: number;
  readonly floodRatio: number;
  readonly spreadRatio: number;
}

interface Subject {
  readonly app: INestApplication;
  readonly guard: RateLimitGuard;
}

async function start(withConsole: boolean): Promise<Subject> {
  const imports: DynamicModule[] = [
    RateLimitModule.forRoot({ getTracker: (c) => c.switchToHttp().getRequest().headers.id }),
    ...(withConsole ? [RateLimitConsoleModule.forRoot({ allowUnauthenticated: true })] : []),
  ];
  const ref = await Test.createTestingModule({ imports, controllers: [BenchController] }).compile();
  const app = ref.createNestApplication({ logger: ['error'] });
  await app.init();
  return { app, guard: app.get(RateLimitGuard) };
}

/** `n` route decisions through the guard, as Express hands them to it, in decisions/s. */
async function decide(
  subject: Subject,
  rejected: boolean,
  trackers: number,
  n: number,
): Promise<number> {
  const handler = rejected ? BenchController.prototype.closed : BenchController.prototype.open;
  const response = { setHeader() {}, getHeader() {} };
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const request = {
      method: 'GET',
      route: { path: rejected ? '/bench/closed' : '/bench/open' },
      headers: { id: KEYS[i % trackers] },
    };
    const context = new ExecutionContextHost(
      [request, response, () => {}],
      BenchController,
      handler,
    );
    context.setType('http');
    try {
      await subject.guard.canActivate(context);
    } catch {
      // The rejection, as the client would get it.
    }
  }
  return n / ((performance.now() - started) / 1000);
}

export async function runConsole(ctx: BenchContext): Promise<ConsoleResult> {
  const subjects = new Map<boolean, Subject>([
    [false, await start(false)],
    [true, await start(true)],
  ]);
  try {
    const result = await sideBySide('console', ROWS, ctx.quick, (id, calls) =>
      decide(
        subjects.get(id !== baseOf(id))!,
        id !== 'with' && id !== 'without',
        trackersOf(id),
        calls,
      ),
    );
    const vs = (row: RowId) => result.vsBaseline.get(row)! / result.vsBaseline.get(baseOf(row))!;
    const allowedRatio = vs('with');
    const floodRatio = vs('with, flood');
    const spreadRatio = vs('with, spread');
    const rows = ROWS.map((id) => {
      const [perSecond, , us, added] = sideBySideCells(
        result.perSecond,
        result.vsBaseline,
        id,
        baseOf(id),
      );
      return [LABELS[id], perSecond, ratio(vs(id)), us, added];
    });
    const markdown = [
      '## The console: what it costs a route decision',
      '',
      `\`RateLimitGuard.canActivate\` on an HTTP handler, called in process on the memory store, ${result.calls.toLocaleString('en-US')} decisions per run; each row against the same outcome without the console, median of per-round ratios.`,
      '',
      table(['row', 'decisions/s', 'vs no console', 'µs per decision', 'µs added'], rows),
      '',
      await measureSharing(ctx),
    ].join('\n');
    return { markdown, allowedRatio, floodRatio, spreadRatio };
  } finally {
    for (const { app } of subjects.values()) await app.close();
  }
}
