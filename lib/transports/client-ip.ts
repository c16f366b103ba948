import { isIP } from 'node:net';

/** Bucket for requests whose address is missing or not an IP, so odd input cannot mint fresh keys. */
export const UNKNOWN_IP = 'unknown';

/**
 * Normalises a client address into a tracker: IPv4 as is, IPv4-mapped IPv6 as IPv4, and other
 * IPv6 addresses reduced to their `/subnet` prefix, since one host usually owns a whole /64.
 */
export function normalizeIp(ip: string | undefined, ipv6Subnet: number): string {
  if (!ip) return UNKNOWN_IP;
  const version = isIP(ip);
  if (version === 4) return ip;
  if (version !== 6) return UNKNOWN_IP;
  const words = parseIpv6(ip);
  if (
    words[0] === 0 &&
    words[1] === 0 &&
    words[2] === 0 &&
    words[3] === 0 &&
    words[4] === 0 &&
    words[5] === 0xffff
  ) {
    return `${words[6] >> 8}.${words[6] & 0xff}.${words[7] >> 8}.${words[7] & 0xff}`;
  }
  return `${maskWords(words, ipv6Subnet)
    .map((w) => w.toString(16))
    .join(':')}/${ipv6Subnet}`;
}

/** Eight 16-bit words of an address `isIP` already accepted (zone ids and dotted tails included). */
function parseIpv6(ip: string): number[] {
  let text = ip.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const [a, b, c, d] = text
      .slice(lastColon + 1)
      .split('.')
      .map(Number);
    tail = [(a << 8) | b, (c << 8) | d];
    text = text.slice(0, lastColon + 1);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const gap = text.indexOf('::');
  if (gap === -1) return [...hexWords(text), ...tail];
  const head = hexWords(text.slice(0, gap));
  const rest = hexWords(text.slice(gap + 2));
  const zeros = new Array<number>(8 - head.length - rest.length - tail.length).fill(0);
  return [...head, ...zeros, ...rest, ...tail];
}

function hexWords(text: string): number[] {
  return text ? text.split(':').map((h) => parseInt(h, 16)) : [];
}

function maskWords(words: number[], bits: number): number[] {
  return words.map((word, i) => {
    const keep = Math.min(Math.max(bits - i * 16, 0), 16);
    return keep === 0 ? 0 : word & ((0xffff << (16 - keep)) & 0xffff);
  });
}
