// Between tries of a decision refused because its slot is half-way through a migration.
const RETRY_MS = 20;

/**
 * Whether Redis refused a decision because its slot is moving between cluster masters: trouble
 * of that decision alone (`TRYAGAIN` while some of its keys have moved already, or a redirection
 * the client did not follow), never of its server.
 */
export function isMovingSlot(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const message = error.message;
  return (
    message.startsWith('TRYAGAIN') ||
    message.startsWith('ASK ') ||
    message.startsWith('MOVED ') ||
    // ioredis, once it has retried TRYAGAIN or followed redirections as often as it may.
    message.startsWith('Too many Cluster redirections')
  );
}

/**
 * Tries a decision again, every few ms until shortly before `deadline`, while Redis refuses it
 * because its slot is moving: a migration holds a slot half-moved for moments only. node-redis
 * passes `TRYAGAIN` on at once; ioredis retries it by itself. Any other error is rethrown.
 */
export async function retryWhileSlotMoves<T>(
  error: unknown,
  deadline: number,
  attempt: () => Promise<T>,
): Promise<T> {
  for (;;) {
    // A try sent later could not be answered before its caller stops waiting.
    if (!isMovingSlot(error) || deadline - performance.now() < 2 * RETRY_MS) throw error;
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    try {
      return await attempt();
    } catch (again) {
      error = again;
    }
  }
}
