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
  private readonly results = new WeakMap<object, { value: unknown }>();

  /**
   * Leaves `settle` for the interceptor of this call; returns whether the interceptor has not
   * taken it yet (true for a call a later guard turned away, which never reaches it).
   */
  leave(context: ExecutionContext, settle: Settle): () => boolean {
    const args = context.getArgs();
    this.byArgs.set(args, settle);
    return () => this.byArgs.has(args);
  }

  /** Asks the interceptor of this call to keep what its handler returns, for {@link takeResult}. */
  keepResult(context: ExecutionContext): void {
    this.results.set(callOf(context), { value: undefined });
  }

  /**
   * Where the interceptor keeps what this call's handler returns (an observable's latest value);
   * undefined when nobody asked.
   */
  resultSlot(context: ExecutionContext): { value: unknown } | undefined {
    return this.results.get(callOf(context));
  }

  /** What this call's handler returned, once; undefined when it returned nothing or nobody kept it. */
  takeResult(context: ExecutionContext): unknown {
    const call = callOf(context);
    const slot = this.results.get(call);
    this.results.delete(call);
    return slot?.value;
  }

  /** Takes what the guard left for this call, if anything. */
  take(context: ExecutionContext): Settle | undefined {
    const args = context.getArgs();
    const settle = this.byArgs.get(args);
    if (settle !== undefined) this.byArgs.delete(args);
    return settle;
  }
}

/**
 * What stands for one call in both its guards and its interceptors: the request over HTTP, where
 * Nest hands each of them an arguments array of its own; elsewhere the arguments array, which
 * they share (a WebSocket's first argument is its connection, shared by its messages).
 */
function callOf(context: ExecutionContext): object {
  return context.getType() === 'http' ? (context.getArgByIndex(0) as object) : context.getArgs();
}
