/**
 * The GLIDE clients the tests opened and have not closed. A GLIDE client left open keeps a native
 * thread busy, slowing every later test: `glide-cleanup.ts` closes what a spec leaves behind.
 * Kept apart from `clients.ts` so that the cleanup loads no client library.
 */
import { type ValkeyGlideClient } from '../../lib/stores/redis/clients/glide.client.js';

const open = new Set<ValkeyGlideClient>();

export function track<T extends ValkeyGlideClient>(client: T): T {
  open.add(client);
  return client;
}

export function untrack(client: ValkeyGlideClient): void {
  open.delete(client);
}

/** Closes every GLIDE client still open. */
export function closeGlideClients(): void {
  for (const client of open) client.close();
  open.clear();
}
