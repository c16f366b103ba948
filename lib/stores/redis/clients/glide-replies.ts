/** What GLIDE replies look like, turned into what the store reads from the other clients. */

// GLIDE names some server error codes by its own kinds; the store reads the server's codes.
const CODES: Readonly<Record<string, string>> = {
  NoScriptError: 'NOSCRIPT',
  BusyLoadingError: 'LOADING',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  ExecAbortError: 'EXECABORT',
  Moved: 'MOVED',
  Ask: 'ASK',
  NotBusy: 'NOTBUSY',
  PermissionDenied: 'NOPERM',
};
const SIGNALLED = 'An error was signalled by the server: - ';

/**
 * An error reply as the server wrote it. GLIDE rewrites `NOSCRIPT No matching script` as
 * `An error was signalled by the server: - NoScriptError: No matching script`, and a Lua
 * `error_reply('CODE text')` as `CODE: text`. Anything else (a connection failure) is returned
 * as it is.
 */
export function serverError(error: unknown): unknown {
  if (!(error instanceof Error) || error.name !== 'RequestError') return error;
  const message = error.message.startsWith(SIGNALLED)
    ? error.message.slice(SIGNALLED.length)
    : error.message;
  const kind = /^(\w+): ([\s\S]*)$/.exec(message);
  if (kind === null) return error;
  const [, name, text] = kind;
  let written: string;
  if (name === 'ResponseError') written = text;
  else if (CODES[name] !== undefined) written = `${CODES[name]} ${text}`;
  else if (/^[A-Z]+$/.test(name)) written = `${name} ${text}`;
  else return error;
  return Object.assign(new Error(written, { cause: error }), { name: 'ReplyError' });
}

/**
 * A map reply as a record: GLIDE decodes a RESP3 map (CONFIG GET's) as a list of
 * `{ key, value }` entries.
 */
export function glideRecord(reply: unknown): Record<string, string> {
  const record: Record<string, string> = {};
  if (!Array.isArray(reply)) return record;
  for (const entry of reply as unknown[]) {
    if (entry !== null && typeof entry === 'object' && 'key' in entry) {
      const { key, value } = entry as { key: unknown; value: unknown };
      record[String(key)] = String(value);
    }
  }
  return record;
}

/**
 * The replies of a command sent to every primary, by node: a cluster client answers with a map
 * of `host:port` to reply, decoded as a list of `{ key, value }` entries (or as a record).
 */
export function repliesByNode(reply: unknown, cluster: boolean): Array<[string, unknown]> {
  if (!cluster || reply === null || typeof reply !== 'object') return [['', reply]];
  if (!Array.isArray(reply)) return Object.entries(reply as Record<string, unknown>);
  return (reply as Array<{ key: unknown; value: unknown }>).map(({ key, value }) => [
    String(key),
    value,
  ]);
}
