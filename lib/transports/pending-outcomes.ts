import { type ExecutionContext, Injectable } from '@nestjs/common';

/** Told once how a counted call ended: `true` when it succeeded. */
export type Settle = (succeeded: boolean) => void;

/**
 * Calls whose outcome the guard waits for and only an interceptor will see (GraphQL resolvers,
 * WebSocket and RPC handlers), by the arguments array Nest hands both to the guards and to the
 * interceptors of one call. One per module: the guard leaves a call here, the interceptor takes it.
 */
@Injectable()
export class PendingOutcomes {
  private readonly byArgs = new WeakMap<object, Settle>();

  /**
   * Leaves `settle` for the interceptor of this call; returns whether the interceptor has not
   * taken it yet (true for a call a later guard turned away, which never reaches it).
   */
  leave(context: ExecutionContext, settle: Settle): () => boolean {
    const args = context.getArgs();
    this.byArgs.set(args, settle);
    return () => this.byArgs.has(args);
  }

  /** Takes what the guard left for this call, if anything. */
  take(context: ExecutionContext): Settle | undefined {
    const args = context.getArgs();
    const settle = this.byArgs.get(args);
    if (settle !== undefined) this.byArgs.delete(args);
    return settle;
  }
}
