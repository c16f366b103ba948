import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { finalize, type Observable, tap } from 'rxjs';
import { PendingOutcomes } from '../transports/pending-outcomes.js';

/**
 * Tells the guard how a GraphQL resolver, WebSocket or microservice handler ended: it failed when
 * it threw, its observable errored, or the caller went away first (HTTP handlers are followed
 * through their response instead). On every transport, it keeps what the handler returned for
 * the policies that settle usage. `@RateLimit` applies it to the handlers that need it (policies
 * that count only some outcomes, hold a lease or settle).
 */
@Injectable()
export class RateLimitInterceptor implements NestInterceptor {
  constructor(private readonly pending: PendingOutcomes) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const slot = this.pending.resultSlot(context);
    const handled =
      slot === undefined ? next.handle() : next.handle().pipe(tap((value) => (slot.value = value)));
    const settle = this.pending.take(context);
    if (settle === undefined) return handled;
    let settled = false;
    const once = (succeeded: boolean) => {
      if (settled) return;
      settled = true;
      settle(succeeded);
    };
    // A caller that unsubscribes first (a closed socket, a cancelled stream) ends in failure.
    return handled.pipe(
      tap({ error: () => once(false), complete: () => once(true) }),
      finalize(() => once(false)),
    );
  }
}
