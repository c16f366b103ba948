/** One autocannon run against the bench app, with requests spread over many client ids. */
import autocannon from 'autocannon';
import { CLIENT_HEADER, CLIENT_IDS, CONNECTIONS, ROUTE_PATH } from './workload.js';

export interface LoadResult {
  readonly reqPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Non-2xx responses plus connection errors (autocannon counts timeouts among them). */
  readonly failures: number;
}

// autocannon keeps latencies in whole milliseconds, too coarse for responses of a few ms, so
// the run records each response's own time; the cap only bounds memory on a very fast machine.
const MAX_LATENCY_SAMPLES = 2_000_000;

const requestFor = (id: number) => ({
  method: 'GET',
  path: ROUTE_PATH,
  headers: { [CLIENT_HEADER]: `c${id}` },
});

/**
 * Connection k cycles over the ids k, k + CONNECTIONS, k + 2 x CONNECTIONS, … below CLIENT_IDS:
 * together the connections cover every id, and no two requests in flight ever share one, as
 * with many separate clients. Each connection builds only its own few requests, once.
 */
function requestsOfConnection(connection: number) {
  const requests = [];
  for (let id = connection % CONNECTIONS; id < CLIENT_IDS; id += CONNECTIONS) {
    requests.push(requestFor(id));
  }
  return requests;
}

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

export async function runLoad(port: number, seconds: number): Promise<LoadResult> {
  let connection = 0;
  const latencies: number[] = [];
  const instance = autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [requestFor(0)],
    setupClient: (client) => client.setRequests(requestsOfConnection(connection++)),
  });
  instance.on('response', (_client, _status, _bytes, ms) => {
    if (latencies.length < MAX_LATENCY_SAMPLES) latencies.push(ms);
  });
  const result = await instance;
  const sorted = Float64Array.from(latencies).sort();
  return {
    reqPerSec: result.requests.average,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    failures: result.non2xx + result.errors,
  };
}
