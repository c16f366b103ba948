import { CLUSTER_SLOTS, keySlot } from '../key-slot.js';

// A map in use is read again this often, so that it follows failovers and resharding.
const REFRESH_AFTER_MS = 5000;

/**
 * Which master serves each slot, for a GLIDE cluster client, which keeps its own map to itself.
 * Read with CLUSTER SLOTS when first asked, again when {@link stale} says it may be wrong (a
 * command failed, the client reconnected), and every {@link REFRESH_AFTER_MS} while it is asked:
 * an idle store reads nothing, and a lookup never waits for a read.
 */
export class GlideSlotMap {
  private bySlot: string[] | undefined;
  private readAt = -Infinity;
  private reading = false;

  /** `readSlots`: CLUSTER SLOTS, sent to any node. */
  constructor(private readonly readSlots: () => Promise<unknown>) {}

  /** The master serving `key`'s slot as `host:port`, or '' while the map is not known. */
  nodeOf(key: string): string {
    if (performance.now() - this.readAt > REFRESH_AFTER_MS) this.refresh();
    return this.bySlot?.[keySlot(key)] ?? '';
  }

  /** The masters in the map, each once; none while it is not known. */
  masters(): string[] {
    return [...new Set(this.bySlot ?? [])].filter((address) => address !== '');
  }

  /** The map may be out of date: the next lookup reads it again. */
  stale(): void {
    this.readAt = -Infinity;
  }

  private refresh(): void {
    if (this.reading) return;
    this.reading = true;
    this.readSlots().then(
      (reply) => {
        this.reading = false;
        this.readAt = performance.now();
        this.bySlot = mastersBySlot(reply);
      },
      () => {
        // Read again at the next lookup after a pause, not at every one.
        this.reading = false;
        this.readAt = performance.now() - REFRESH_AFTER_MS + 1000;
      },
    );
  }
}

/** CLUSTER SLOTS (`[[start, end, [host, port, id], …replicas], …]`) as each slot's `host:port`. */
function mastersBySlot(reply: unknown): string[] {
  const masters = new Array<string>(CLUSTER_SLOTS).fill('');
  if (!Array.isArray(reply)) return masters;
  for (const range of reply as unknown[]) {
    if (!Array.isArray(range) || range.length < 3 || !Array.isArray(range[2])) continue;
    const [start, end, master] = range as [number, number, unknown[]];
    const address = `${String(master[0])}:${String(master[1])}`;
    for (let slot = Number(start); slot <= Number(end) && slot < CLUSTER_SLOTS; slot++) {
      masters[slot] = address;
    }
  }
  return masters;
}
