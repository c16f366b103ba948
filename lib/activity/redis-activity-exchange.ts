import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type DecisionScript } from '../stores/redis/decisions/scripts.js';
import { type RedisStore } from '../stores/redis/redis.store.js';
import {
  type ScriptClient,
  StoreNotConnectedError,
} from '../stores/redis/clients/script-client.js';
import { type ActivityExchange, type ActivityReport, KEPT_MINUTES } from './activity-exchange.js';
import { packReport, unpackReport } from './packed-report.js';

/** The script that shares and reads the reports (`activity.lua`), run by EVALSHA, else EVAL. */
const ACTIVITY_SCRIPT: DecisionScript = (() => {
  const lua = readFileSync(new URL('./activity.lua', import.meta.url), 'utf8');
  return Object.freeze({
    command: 'rateLimitActivity',
    lua,
    sha: createHash('sha1').update(lua).digest('hex'),
  });
})();

const MINUTE_MS = 60_000;

/**
 * The instances' reports in Redis: a hash per minute, `<prefix>:{console}:<minute>`, a field per
 * instance holding its packed report, living 17 minutes from its last write (see docs/console.md,
 * What it stores).
 */
export class RedisActivityExchange implements ActivityExchange {
  readonly shared = true;
  private readonly head: string;

  constructor(
    private readonly scripts: ScriptClient,
    keyPrefix: string,
  ) {
    this.head = `${keyPrefix}:{console}:`;
  }

  static forStore(store: RedisStore, keyPrefix: string): RedisActivityExchange {
    return new RedisActivityExchange(store.scriptClient, keyPrefix);
  }

  async share(report: ActivityReport): Promise<void> {
    if (!this.scripts.ready()) throw new StoreNotConnectedError(this.scripts.library);
    const life = String(KEPT_MINUTES * MINUTE_MS);
    const keys = [this.head + report.minute];
    await this.scripts.run(ACTIVITY_SCRIPT, keys, [
      'share',
      report.instance,
      packReport(report),
      life,
    ]);
  }

  async read(minutes: readonly number[]): Promise<ActivityReport[]> {
    if (minutes.length === 0) return [];
    if (!this.scripts.ready()) throw new StoreNotConnectedError(this.scripts.library);
    const keys = minutes.map((m) => this.head + m);
    const reply = (await this.scripts.run(ACTIVITY_SCRIPT, keys, ['read'])) as unknown[][];
    const reports: ActivityReport[] = [];
    for (const fields of reply) {
      for (let i = 1; i < fields.length; i += 2) {
        const report = unpackReport(fields[i]);
        if (report !== undefined) reports.push(report);
      }
    }
    return reports;
  }
}
