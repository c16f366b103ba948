/**
 * Counts the decisions one client sends on one key, by looking at each command's arguments on
 * its way out: a command whose arguments name the key is one decision, and a batch of ours one
 * per decision it carries on the key (one state key each; the batch's id key aside). What it
 * matched is kept, so a reader can check the key forms.
 */
import { type Command, type Redis } from 'ioredis';

export interface KeyCallCounter {
  /** Decisions sent on the key. */
  readonly calls: () => number;
  /** The distinct arguments that matched. */
  readonly matched: () => string[];
  /** Puts the client's own `sendCommand` back. */
  readonly restore: () => void;
}

/** A call of our batch function (see lib/algorithms/batch.lua), named `<library>_batch`. */
const isBatch = (command: Command) =>
  command.name === 'fcall' && String(command.args[0]).endsWith('_batch');

export function countKeyCalls(client: Redis, marker: string): KeyCallCounter {
  const original = client.sendCommand;
  let calls = 0;
  const matched = new Set<string>();
  // An own property shadows the prototype's method; deleting it restores the client.
  client.sendCommand = function (this: Redis, command: Command, ...rest: unknown[]) {
    let hits = 0;
    for (const arg of command.args) {
      if (typeof arg === 'string' && arg.includes(marker) && !arg.includes(':id:')) {
        hits++;
        if (matched.size < 8) matched.add(arg);
      }
    }
    // A command decides once, however many of its keys name the key; a batch, once per decision.
    calls += isBatch(command) ? hits : Math.min(hits, 1);
    return (original as (...args: unknown[]) => unknown).call(this, command, ...rest);
  } as Redis['sendCommand'];
  return {
    calls: () => calls,
    matched: () => [...matched],
    restore: () => void delete (client as Partial<Pick<Redis, 'sendCommand'>>).sendCommand,
  };
}
