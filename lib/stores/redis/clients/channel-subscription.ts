/** What a subscription to one channel reports; each is called from the client's own events. */
export interface SubscriptionHandlers {
  /** A message was published on the channel; its text does not matter here. */
  message(): void;
  /**
   * The subscription is in place: first once it is set up, then again after each reconnection of
   * its connection, during which messages may have been missed.
   */
  subscribed(): void;
}

/**
 * A subscription to one channel on a connection of its own, made and kept in the background: it
 * never throws, and a connection that cannot be made only means that no message arrives.
 */
export interface ChannelSubscription {
  /** Unsubscribes and ends the connection, resolving once it has ended (or after a short while). */
  close(): Promise<void>;
}

/** A subscription that never receives anything: what a client that cannot subscribe gives. */
export const NO_SUBSCRIPTION: ChannelSubscription = Object.freeze({
  close: () => Promise.resolve(),
});
