// Microservices over TCP (no HTTP adapter, so once per module system): a hundred sums a second
// per user, then an RpcException whose error is a RateLimitErrorPayload with statusCode 429.
import { Module } from '@nestjs/common';
import { type ClientProxy } from '@nestjs/microservices';
import { RateLimitModule, type RateLimitErrorPayload } from 'nest-rate-limit';
import { lastValueFrom } from 'rxjs';
import { MathController } from './microservices.js';
import { assert, atOnce, type TcpScenario } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], controllers: [MathController] })
class MathApp {}

const sum = (client: ClientProxy, id: string) =>
  lastValueFrom(client.send<number>({ cmd: 'sum' }, { numbers: [1, 2], user: { id } }));

export const scenario: TcpScenario = {
  kind: 'tcp',
  module: MathApp,
  async run(client) {
    const results = await atOnce(100, () => sum(client, '42'));
    assert.deepEqual(new Set(results), new Set([3]));
    await assert.rejects(sum(client, '42'), (error: RateLimitErrorPayload) => {
      assert.equal(error.statusCode, 429);
      return true;
    });
    assert.equal(await sum(client, '43'), 3, 'another user, its own budget');
  },
};
