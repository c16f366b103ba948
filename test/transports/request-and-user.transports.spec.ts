import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Controller,
  createParamDecorator,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { MessagePattern } from '@nestjs/microservices';
import { type OnGatewayInit, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { firstValueFrom } from 'rxjs';
import type { Server, Socket as ServerSocket } from 'socket.io';
import { io } from 'socket.io-client';
import request from 'supertest';
import { RateLimitModule, requestOf, userOf } from '../../lib/index.js';
import { startHttpApp, USER_HEADER } from '../contract/http/fixtures/http-app.js';
import { type RpcApp, startRpcApp } from './fixtures/rpc-app.js';

/** What `requestOf` and `userOf` found for a call: its `x-probe` header (or `probe` field), its user's id. */
const Seen = createParamDecorator((_data: unknown, ctx: ExecutionContext) => {
  const req = requestOf(ctx);
  return JSON.stringify({
    probe: req?.headers?.['x-probe'] ?? req?.probe ?? null,
    user: userOf(ctx)?.id ?? null,
  });
});

@Resolver()
class WhoResolver {
  @Query(() => String)
  who(@Seen() seen: string): string {
    return seen;
  }
}

@WebSocketGateway()
class WhoGateway implements OnGatewayInit {
  afterInit(server: Server): void {
    server.use((socket: ServerSocket, next: () => void) => {
      const token: unknown = socket.handshake.auth?.token;
      if (typeof token === 'string') socket.data.user = { id: token };
      next();
    });
  }

  @SubscribeMessage('who')
  who(@Seen() seen: string): string {
    return seen;
  }
}

@Controller()
class WhoController {
  @MessagePattern('who')
  who(@Seen() seen: string): string {
    return seen;
  }
}

describe('requestOf and userOf off HTTP', () => {
  describe('GraphQL (Apollo on Express)', () => {
    let app: INestApplication;
    beforeAll(async () => {
      app = await startHttpApp({
        imports: [
          RateLimitModule.forRoot({}),
          GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
        ],
        providers: [WhoResolver],
      });
    });
    afterAll(() => app.close());

    it("read the context's request and the user on it", async () => {
      const res = await request(app.getHttpServer())
        .post('/graphql')
        .set('x-probe', 'gql')
        .set(USER_HEADER, 'ann')
        .send({ query: '{ who }' });
      expect(JSON.parse(res.body.data.who)).toEqual({ probe: 'gql', user: 'ann' });
    });
  });

  describe('WebSocket (Socket.IO)', () => {
    let app: INestApplication;
    beforeAll(async () => {
      app = await startHttpApp({ imports: [RateLimitModule.forRoot({})], providers: [WhoGateway] });
    });
    afterAll(() => app.close());

    it("read the handshake's request and the socket's user", async () => {
      const socket = io(await app.getUrl(), {
        transports: ['websocket'],
        forceNew: true,
        reconnection: false,
        auth: { token: 'bob' },
        extraHeaders: { 'x-probe': 'ws' },
      });
      try {
        const answer = await socket.timeout(5000).emitWithAck('who', 'hi');
        expect(JSON.parse(answer as string)).toEqual({ probe: 'ws', user: 'bob' });
      } finally {
        socket.close();
      }
    });
  });

  describe('RPC (TCP)', () => {
    let rpc: RpcApp;
    beforeAll(async () => {
      rpc = await startRpcApp({}, { controllers: [WhoController] });
    });
    afterAll(() => rpc.close());

    it('read the message and the user in it', async () => {
      const answer = await firstValueFrom(
        rpc.client.send<string>('who', { probe: 'rpc', user: { id: 'cy' } }),
      );
      expect(JSON.parse(answer)).toEqual({ probe: 'rpc', user: 'cy' });
    });
  });
});
