import { graphqlTransport } from './kinds/graphql.transport.js';
import { httpTransport } from './kinds/http.transport.js';
import { rpcTransport } from './kinds/rpc.transport.js';
import { type Transport } from './transport.js';
import { wsTransport } from './kinds/ws.transport.js';

export { newRouteMemo, type Rejection, type RouteMemo, type Transport } from './transport.js';

/**
 * The transport for a context type (`context.getType()`), or undefined for a type the module
 * does not know, whose calls then pass unlimited.
 */
export function transportFor(type: string): Transport | undefined {
  switch (type) {
    case 'http':
      return httpTransport;
    case 'graphql':
      return graphqlTransport;
    case 'ws':
      return wsTransport;
    case 'rpc':
      return rpcTransport;
    default:
      return undefined;
  }
}
