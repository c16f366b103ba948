import {
  type ChannelSubscription,
  NO_SUBSCRIPTION,
  type SubscriptionHandlers,
} from './channel-subscription.js';

/** The parts of a node-redis client or cluster that a subscription uses. */
export interface NodeRedisSubscriber {
  readonly isOpen: boolean;
  duplicate?(): NodeRedisSubscriber;
  connect?(): Promise<unknown>;
  subscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  destroy(): void;
  on?(event: string, listener: (error: Error) => void): unknown;
}

/**
 * Subscribes to `channel` on a copy of a node-redis client or cluster: a connection in subscriber
 * mode can send nothing else. node-redis subscribes again as it reconnects and emits `ready` once
 * that is done, which is when the subscription says it is in place again.
 */
export function nodeRedisSubscription(
  client: NodeRedisSubscriber,
  channel: string,
  handlers: SubscriptionHandlers,
): ChannelSubscription {
  if (typeof client.duplicate !== 'function') return NO_SUBSCRIPTION;
  let sub: NodeRedisSubscriber;
  try {
    sub = client.duplicate();
  } catch {
    return NO_SUBSCRIPTION;
  }
  let closed = false;
  let subscribed = false;
  // node-redis throws an `error` nobody listens to, which would end the process; the main client
  // reports connection errors already.
  sub.on?.('error', () => {});
  sub.on?.('ready', () => {
    if (subscribed && !closed) handlers.subscribed();
  });
  const listener = () => {
    if (!closed) handlers.message();
  };
  // connect() settles once connected, retrying meanwhile, or rejects when the copy gives up (its
  // reconnect strategy says so) or is closed: then no message arrives.
  Promise.resolve()
    .then(() => sub.connect!())
    .then(() => sub.subscribe!(channel, listener))
    .then(
      () => {
        subscribed = true;
        if (!closed) handlers.subscribed();
      },
      () => {},
    );
  return {
    close() {
      closed = true;
      // Nothing is pending on a subscriber: drop the connection without waiting.
      if (sub.isOpen) sub.destroy();
      return Promise.resolve();
    },
  };
}
