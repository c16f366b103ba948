/** A closed-loop run with what it cost on each side: Redis's counters and this process's CPU. */
import { type Redis } from 'ioredis';
import { type Decide, type LoopResult, runClosedLoop } from './closed-loop.js';
import { counterDelta, type ServerCounters, serverCounters } from './redis-stats.js';

export interface MeasuredRun extends LoopResult {
  readonly server: ServerCounters;
  /** CPU this process used during the run, in µs: the limiter's client side and the runner. */
  readonly nodeCpuMicros: number;
  /** Wall-clock bounds of the run (Date.now()), to tell which clock-aligned windows it touched. */
  readonly startedAtMs: number;
  readonly endedAtMs: number;
}

export async function measuredRun(
  admin: Redis,
  total: number,
  inFlight: number,
  decide: Decide,
): Promise<MeasuredRun> {
  const before = await serverCounters(admin);
  const cpu = process.cpuUsage();
  const startedAtMs = Date.now();
  const loop = await runClosedLoop(total, inFlight, decide);
  const endedAtMs = Date.now();
  const used = process.cpuUsage(cpu);
  const after = await serverCounters(admin);
  return {
    ...loop,
    server: counterDelta(before, after),
    nodeCpuMicros: used.user + used.system,
    startedAtMs,
    endedAtMs,
  };
}
