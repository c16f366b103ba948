import { isConnectionFailure } from './glide-connection.js';
import {
  type ChannelSubscription,
  NO_SUBSCRIPTION,
  type SubscriptionHandlers,
} from './channel-subscription.js';

/** A GLIDE client as a subscription uses it: closed, and made again from its class. */
interface GlideLike {
  /** The options it was created with; GLIDE keeps them. */
  readonly config?: Record<string, unknown>;
  close(errorMessage?: string): void;
}

/** `GlideClient` or `GlideClusterClient`, whichever made the client handed over. */
interface GlideClass {
  createClient(options: Record<string, unknown>): Promise<GlideLike>;
}

// `PubSubChannelModes.Exact`, the same in both classes.
const EXACT = 0;
// A subscriber that could not connect is tried again this long after.
const RETRY_MS = 1000;

/**
 * Subscribes to `channel` on a new client of the same class and options as a GLIDE client: GLIDE
 * takes its subscriptions only when a client is created. GLIDE subscribes again by itself after a
 * reconnection but does not say so, so `subscribed` is called once only, when the client is made.
 */
export function glideSubscription(
  client: GlideLike,
  channel: string,
  handlers: SubscriptionHandlers,
): ChannelSubscription {
  const Class = client.constructor as unknown as Partial<GlideClass>;
  const config = client.config;
  if (typeof Class.createClient !== 'function' || config === undefined) return NO_SUBSCRIPTION;
  let closed = false;
  let sub: GlideLike | undefined;
  let timer: NodeJS.Timeout | undefined;
  let creating: Promise<void> | undefined;
  const options = {
    ...config,
    // Connected now: a lazy client would wait for a command that a subscriber never sends.
    lazyConnect: false,
    pubsubSubscriptions: {
      channelsAndPatterns: { [EXACT]: new Set([channel]) },
      callback: () => {
        if (!closed) handlers.message();
      },
    },
  };
  const create = () => {
    timer = undefined;
    creating = Class.createClient!(options).then(
      (made) => {
        creating = undefined;
        if (closed) return made.close();
        sub = made;
        handlers.subscribed();
      },
      (error: unknown) => {
        creating = undefined;
        // Tried again only while the server cannot be reached: options GLIDE refuses for a
        // subscriber (RESP2) would be refused every time.
        if (!closed && isConnectionFailure(error)) timer = setTimeout(create, RETRY_MS).unref();
      },
    );
  };
  create();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      // A client still being made is closed as soon as it is.
      await creating;
      sub?.close();
      sub = undefined;
    },
  };
}
