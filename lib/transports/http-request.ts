/** The parts of an Express or Fastify request the guard reads. */
export interface HttpRequestLike {
  method?: string;
  ip?: string;
  user?: unknown;
  headers?: Record<string, string | string[] | undefined>;
  socket?: { remoteAddress?: string };
  /** Express: the matched route. */
  route?: { path?: unknown };
  /** Fastify: the matched route. */
  routeOptions?: { url?: string };
  /** Fastify: the Node request underneath, which is what Nest middleware sees. */
  raw?: { user?: unknown };
}

/**
 * The user an HTTP request carries: `req.user`, else, on Fastify, `req.raw.user`, where Nest
 * middleware (which sees the raw Node request) puts it.
 */
export function requestUser(req: HttpRequestLike | undefined): unknown {
  return req?.user ?? req?.raw?.user;
}

/** The parts of an Express response or a Fastify reply the guard writes. */
export interface HttpResponseLike {
  header?(name: string, value: string): unknown;
  setHeader?(name: string, value: string): unknown;
}

/** The route pattern that matched (`/items/:id`), never the raw URL, so ids cannot dodge a limit. */
export function routePattern(req: HttpRequestLike): string | undefined {
  const path = req.route?.path;
  if (typeof path === 'string') return path;
  return req.routeOptions?.url;
}

/** HEAD is answered by GET handlers; counting them apart would double a client's allowance. */
export function routeMethod(req: HttpRequestLike): string {
  const method = req.method ?? 'GET';
  return method === 'HEAD' ? 'GET' : method;
}

export function setHeader(res: HttpResponseLike, name: string, value: string): void {
  if (typeof res.header === 'function') res.header(name, value);
  else if (typeof res.setHeader === 'function') res.setHeader(name, value);
}
