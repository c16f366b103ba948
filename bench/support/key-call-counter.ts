/**
 * Counts the commands one client sends that concern one key, by looking at each command's
 * arguments on its way out. What it matched is kept, so a reader can check the key forms.
 */
import { type Command, type Redis } from 'ioredis';

export interface KeyCallCounter {
  /** Commands sent whose arguments contained the marker. */
  readonly calls: () => number;
  /** The distinct arguments that matched. */
  readonly matched: () => string[];
  /** Puts the client's own `sendCommand` back. */
  readonly restore: () => void;
}

export function countKeyCalls(client: Redis, marker: string): KeyCallCounter {
  const original = client.sendCommand;
  let calls = 0;
  const matched = new Set<string>();
  // An own property shadows the prototype's method; deleting it restores the client.
  client.sendCommand = function (this: Redis, command: Command, ...rest: unknown[]) {
    let hit = false;
    for (const arg of command.args) {
      if (typeof arg === 'string' && arg.includes(marker)) {
        hit = true;
        if (matched.size < 8) matched.add(arg);
      }
    }
    if (hit) calls++;
    return (original as (...args: unknown[]) => unknown).call(this, command, ...rest);
  } as Redis['sendCommand'];
  return {
    calls: () => calls,
    matched: () => [...matched],
    restore: () => void delete (client as Partial<Pick<Redis, 'sendCommand'>>).sendCommand,
  };
}
