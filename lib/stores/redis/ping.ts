import { StoreTimeoutError } from '../resilience/deadlines.js';
import { type ScriptClient } from './clients/script-client.js';

/**
 * Sends PING through `client` and resolves with the round trip in ms; rejects when no reply
 * comes within `withinMs`. For health checks, which are rare: the one timer is theirs, and
 * decisions never wait on it.
 */
export function pingWithin(client: ScriptClient, withinMs: number): Promise<number> {
  return answeredWithin(() => client.command(['PING']), withinMs);
}

/** Sends what `send` sends and resolves with the round trip in ms, or rejects after `withinMs`. */
export async function answeredWithin(
  send: () => Promise<unknown>,
  withinMs: number,
): Promise<number> {
  const startedAt = performance.now();
  const reply = send();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(withinMs)), withinMs);
  });
  // A reply that comes after the bound has nobody waiting for it.
  reply.catch(() => {});
  try {
    await Promise.race([reply, late]);
  } finally {
    clearTimeout(timer);
  }
  return performance.now() - startedAt;
}
