import { type Cluster, type Redis } from 'ioredis';
import {
  type ChannelSubscription,
  NO_SUBSCRIPTION,
  type SubscriptionHandlers,
} from './channel-subscription.js';

// Closing must finish even if the socket never reports its end.
const END_GRACE_MS = 1000;

/**
 * Subscribes to `channel` on a copy of an ioredis (or iovalkey) `Redis` or `Cluster`: a connection
 * in subscriber mode can send nothing else. The copy subscribes again on each `ready` itself,
 * instead of leaving it to ioredis's own resubscription, which does not say when it is done.
 */
export function ioredisSubscription(
  client: Redis | Cluster,
  channel: string,
  handlers: SubscriptionHandlers,
): ChannelSubscription {
  let sub: Redis | Cluster;
  try {
    sub = client.isCluster
      ? (client as Cluster).duplicate([], { lazyConnect: false })
      : (client as Redis).duplicate({ lazyConnect: false, autoResubscribe: false });
  } catch {
    return NO_SUBSCRIPTION;
  }
  let closed = false;
  // The main client reports connection errors; the copy's would only repeat them.
  sub.on('error', () => {});
  sub.on('message', (from: string) => {
    if (!closed && from === channel) handlers.message();
  });
  const subscribe = () => {
    sub.subscribe(channel).then(
      () => {
        if (!closed) handlers.subscribed();
      },
      // The connection dropped meanwhile: the next `ready` subscribes again.
      () => {},
    );
  };
  sub.on('ready', subscribe);
  return {
    async close() {
      closed = true;
      sub.off('ready', subscribe);
      if (sub.status === 'end') return;
      let timer: NodeJS.Timeout | undefined;
      const ended = new Promise<void>((resolve) => {
        sub.once('end', () => resolve());
        timer = setTimeout(resolve, END_GRACE_MS);
      });
      // Nothing is pending on a subscriber: drop the connection without a QUIT.
      sub.disconnect();
      await ended;
      clearTimeout(timer);
    },
  };
}
