// WebSockets: twenty chat messages per 10 s per user, the user verified at connection; the
// twenty-first raises an `exception` event with statusCode 429 and the socket stays open.
import { Module } from '@nestjs/common';
import { RateLimitModule, type RateLimitErrorPayload } from 'nest-rate-limit';
import { io, type Socket } from 'socket.io-client';
import { ChatGateway } from './websockets.js';
import { assert, type HttpScenario } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], providers: [ChatGateway] })
class ChatApp {}

function connect(base: string, token: string): Promise<Socket> {
  const socket = io(base, { auth: { token }, transports: ['websocket'], reconnection: false });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', reject);
  });
}

export const scenario: HttpScenario = {
  kind: 'http',
  module: ChatApp,
  async run(http) {
    const ann = await connect(http.base, 'user-ann');
    const bea = await connect(http.base, 'user-bea');
    try {
      for (let i = 0; i < 20; i++)
        assert.equal(await ann.timeout(5000).emitWithAck('chat', `hi ${i}`), `echo: hi ${i}`);
      const refused = new Promise<RateLimitErrorPayload>((resolve) =>
        ann.once('exception', resolve),
      );
      ann.emit('chat', 'one more');
      const error = await refused;
      assert.equal(error.statusCode, 429);
      assert.ok((error.retryAfterMs ?? 0) > 0);
      assert.ok(ann.connected, 'the socket stays open');
      // Same address, another verified user: a budget of its own.
      assert.equal(await bea.timeout(5000).emitWithAck('chat', 'hello'), 'echo: hello');
    } finally {
      ann.close();
      bea.close();
    }
  },
};
