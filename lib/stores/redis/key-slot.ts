/** How many hash slots a Redis Cluster has. */
export const CLUSTER_SLOTS = 16384;

// CRC16-CCITT (XMODEM), polynomial 0x1021, as Redis Cluster uses: one table entry per byte.
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/**
 * The Redis Cluster hash slot of `key`, as `CLUSTER KEYSLOT` computes it: CRC16 of the hash tag
 * (what lies between the first `{` and the next `}`, when not empty), or of the whole key,
 * modulo 16384. Over the key's UTF-8 bytes, which is what the clients send.
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  let from = 0;
  let to = key.length;
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) {
      from = open + 1;
      to = close;
    }
  }
  let crc = 0;
  for (let i = from; i < to; i++) {
    const code = key.charCodeAt(i);
    // Rare in keys: hash the UTF-8 bytes of the same span instead.
    if (code > 0x7f) return crcOfBytes(Buffer.from(key.slice(from, to), 'utf8'));
    crc = ((crc << 8) ^ TABLE[((crc >> 8) ^ code) & 0xff]) & 0xffff;
  }
  return crc % CLUSTER_SLOTS;
}

function crcOfBytes(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) ^ TABLE[((crc >> 8) ^ byte) & 0xff]) & 0xffff;
  return crc % CLUSTER_SLOTS;
}
