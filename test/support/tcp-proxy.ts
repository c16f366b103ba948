/**
 * A TCP proxy in front of a test server, for faults a real network has: added latency each way,
 * connections reset in the middle of a reply, and new connections refused for a while. Loopback
 * only.
 */
import { createServer, type Server, type Socket, connect } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  readonly url: string;
  /** Delays every chunk by this many ms in each direction from now on (0: none). */
  delay(ms: number): void;
  /**
   * Holds every reply the server sends from now on, on every connection, until the function it
   * returns is called: that writes them all to their clients at once, in order, as replies a
   * network held back arrive together. Commands still reach the server as they are sent.
   */
  holdReplies(): () => void;
  /**
   * Resets the connection that carries the next reply from the server: half of that reply's first
   * chunk reaches the client, then both sides are reset (RST), as when a network drops mid-reply.
   * The server has already run the command. Resolves once a connection was reset.
   */
  resetMidReply(): Promise<void>;
  /**
   * Resets every connection a client opens for the next `ms` ms, as a network that is still down
   * does: a client whose first reconnection is immediate (node-redis) then waits for its retry.
   */
  refuseConnections(ms: number): void;
  /** How many connections were reset so far. */
  readonly resets: number;
  /** How many client connections were accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/** Starts a proxy on a free loopback port that forwards to `target` (host 127.0.0.1). */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let delayMs = 0;
  let resets = 0;
  let connections = 0;
  let armed: (() => void) | undefined;
  let refuseUntil = 0;
  const sockets = new Set<Socket>();

  // Each direction is one byte stream, as TCP keeps it: a chunk is written no earlier than the
  // one before it, so that lowering the delay (to 0 after a slow phase) never lets new bytes
  // overtake those still delayed, which would hand replies to the wrong commands. A held chunk
  // waits (at Infinity) until it is released.
  let holding = false;
  const heldReplies = new Set<() => void>();
  const forward = (
    from: Socket,
    to: Socket,
    holds: boolean,
    onChunk?: (chunk: Buffer) => boolean,
  ) => {
    const queue: Array<{ chunk: Buffer; at: number }> = [];
    let timer: NodeJS.Timeout | undefined;
    const drain = () => {
      clearTimeout(timer);
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0].at <= now) {
        const { chunk } = queue.shift()!;
        if (!to.destroyed) to.write(chunk);
      }
      if (queue.length > 0 && queue[0].at !== Infinity) {
        timer = setTimeout(drain, queue[0].at - now);
      }
    };
    const release = () => {
      for (const item of queue) if (item.at === Infinity) item.at = 0;
      drain();
    };
    if (holds) heldReplies.add(release);
    from.on('close', () => heldReplies.delete(release));
    from.on('data', (chunk: Buffer) => {
      if (onChunk?.(chunk) === false) return;
      const held = holds && holding;
      if (!held && delayMs === 0 && queue.length === 0) {
        to.write(chunk);
        return;
      }
      queue.push({ chunk, at: held ? Infinity : performance.now() + delayMs });
      if (queue[0].at !== Infinity) {
        timer ??= setTimeout(drain, Math.max(0, queue[0].at - performance.now()));
      }
    });
  };

  const server: Server = createServer((client) => {
    if (performance.now() < refuseUntil) {
      client.resetAndDestroy();
      return;
    }
    connections++;
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    forward(client, upstream, false);
    forward(upstream, client, true, (chunk) => {
      const resolve = armed;
      if (resolve === undefined) return true;
      armed = undefined;
      const half = chunk.subarray(0, Math.max(1, chunk.length >> 1));
      client.write(half, () => {
        client.resetAndDestroy();
        upstream.resetAndDestroy();
        resets++;
        resolve();
      });
      return false;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    delay(ms) {
      delayMs = ms;
    },
    holdReplies() {
      holding = true;
      return () => {
        holding = false;
        for (const release of heldReplies) release();
      };
    },
    resetMidReply() {
      return new Promise<void>((resolve) => (armed = resolve));
    },
    refuseConnections(ms) {
      refuseUntil = performance.now() + ms;
    },
    get resets() {
      return resets;
    },
    get connections() {
      return connections;
    },
    async close() {
      armed = undefined;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
