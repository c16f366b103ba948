import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { finalize, type Observable, tap } from 'rxjs';

/** Told once how a counted request ended: `true` when it succeeded. */
export type Settle = (succeeded: boolean) => void;

/** The Node response under an Express response or a Fastify reply. */
interface NodeResponseLike {
  statusCode?: number;
  writableFinished?: boolean;
  closed?: boolean;
  destroyed?: boolean;
  once?(event: 'close', listener: () => void): unknown;
}

// Calls of GraphQL resolvers, WebSocket and RPC handlers waiting for their outcome, by the
// arguments array Nest hands both to the guards and to the interceptors of one call.
const pending = new WeakMap<object, Settle>();

/**
 * Arranges for `settle` to be told how the request ends, and returns whether nothing has taken
 * charge of telling it yet. HTTP: from the response itself, once it
 * closes, so that a status set by an exception filter, another guard or the handler counts, and
 * a client that goes away before the response is complete counts as a failure. Other transports:
 * through {@link RateLimitInterceptor}, which `@RateLimit` puts on every handler with a policy
 * that counts only some outcomes.
 */
export function watchOutcome(context: ExecutionContext, settle: Settle): () => boolean {
  if (context.getType() === 'http') {
    const reply = context.getArgByIndex<NodeResponseLike & { raw?: NodeResponseLike }>(1);
    const res = reply?.raw ?? reply;
    if (typeof res?.once !== 'function') {
      settle(false);
      return neverUnclaimed;
    }
    const closed = () => {
      const status = res.statusCode ?? 500;
      settle(res.writableFinished === true && status < 400);
    };
    // The client may have gone while the guard was deciding: 'close' has fired already.
    if (res.closed === true || res.destroyed === true) closed();
    else res.once('close', closed);
    return neverUnclaimed;
  }
  const args = context.getArgs();
  pending.set(args, settle);
  // True until the interceptor takes charge: a call a later guard turned away never reaches it.
  return () => pending.has(args);
}

const neverUnclaimed = () => false;

/**
 * Tells the guard how a GraphQL resolver, WebSocket or microservice handler ended: it failed when
 * it threw, its observable errored, or the caller went away first. `@RateLimit` applies it to the
 * handlers that need it; HTTP handlers are followed through their response instead.
 */
@Injectable()
export class RateLimitInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const args = context.getArgs();
    const settle = pending.get(args);
    if (settle === undefined) return next.handle();
    pending.delete(args);
    let settled = false;
    const once = (succeeded: boolean) => {
      if (settled) return;
      settled = true;
      settle(succeeded);
    };
    // A caller that unsubscribes first (a closed socket, a cancelled stream) ends in failure.
    return next.handle().pipe(
      tap({ error: () => once(false), complete: () => once(true) }),
      finalize(() => once(false)),
    );
  }
}
