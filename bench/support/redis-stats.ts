/** Reading the server's own counters, so call counts and costs come from Redis rather than from us. */
import { type Redis } from 'ioredis';

/** One `name:value` line of an INFO reply. */
export function infoField(info: string, name: string): string | undefined {
  const line = info.split('\r\n').find((l) => l.startsWith(`${name}:`));
  return line?.slice(name.length + 1);
}

export interface ServerCounters {
  /** Every command executed, including those run inside Lua scripts. */
  readonly commands: number;
  /** EVAL, EVALSHA and FCALL calls: one per script-based decision, each a round trip. */
  readonly scripts: number;
  /** Time spent running those scripts and functions, in µs. */
  readonly scriptMicros: number;
  /** CPU the server used, all threads, in µs: parsing and I/O as well as commands. */
  readonly cpuMicros: number;
}

// FCALL too: our store runs its decisions as a Redis Function where the server has them.
const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);

export async function serverCounters(admin: Redis): Promise<ServerCounters> {
  const info = String(await admin.call('INFO', 'commandstats', 'cpu'));
  let commands = 0;
  let scripts = 0;
  let scriptMicros = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    const calls = Number(match[2]);
    commands += calls;
    if (SCRIPT_COMMANDS.has(match[1])) {
      scripts += calls;
      scriptMicros += Number(match[3]);
    }
  }
  const cpu = (name: string) => Number(infoField(info, name) ?? NaN) * 1e6;
  return { commands, scripts, scriptMicros, cpuMicros: cpu('used_cpu_user') + cpu('used_cpu_sys') };
}

/** What the server did between two readings. */
export function counterDelta(before: ServerCounters, after: ServerCounters): ServerCounters {
  return {
    commands: after.commands - before.commands,
    scripts: after.scripts - before.scripts,
    scriptMicros: after.scriptMicros - before.scriptMicros,
    cpuMicros: after.cpuMicros - before.cpuMicros,
  };
}

// A decision's id key (`…}:id:<id>`) lives a moment after each decision, whatever the client's
// state: it is counted per decision (docs/redis.md, Decision ids), not per client key.
const DECISION_ID_KEY = /\}:id:[\w-]+$/;

/**
 * Bytes of every key in the database that holds a client's state, by MEMORY USAGE with every
 * element counted.
 */
export async function memoryOfAllKeys(admin: Redis): Promise<{ keys: string[]; bytes: number }> {
  const keys = (await admin.keys('*')).filter((key) => !DECISION_ID_KEY.test(key)).sort();
  let bytes = 0;
  for (const key of keys) bytes += Number(await admin.memory('USAGE', key, 'SAMPLES', 0));
  return { keys, bytes };
}
