/** What the numbers were measured on: without it a results table cannot be compared to another. */
import { availableParallelism, cpus } from 'node:os';
import { type Redis } from 'ioredis';
import { infoField } from './redis-stats.js';

export interface Machine {
  readonly cores: number;
  readonly cpu: string;
  readonly node: string;
  readonly redis: string;
}

export async function describeMachine(admin: Redis): Promise<Machine> {
  return {
    cores: availableParallelism(),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    node: process.version,
    redis: infoField(await admin.info('server'), 'redis_version') ?? 'unknown',
  };
}
