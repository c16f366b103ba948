// Count only successes: forms that fail validation are given back; three sign-ups, then 429.
import {
  BadRequestException,
  type ArgumentMetadata,
  Injectable,
  Module,
  type PipeTransform,
} from '@nestjs/common';
import { APP_PIPE } from '@nestjs/core';
import { RateLimitModule } from 'nest-rate-limit';
import { AccountsController } from './count-successes.js';
import { assert, type HttpScenario } from './support.js';

/** What a ValidationPipe does for the recipe's SignupDto: 400 without an e-mail address. */
@Injectable()
class SignupValidation implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata) {
    const email = (value as { email?: unknown } | undefined)?.email;
    if (metadata.type === 'body' && !(typeof email === 'string' && email.includes('@')))
      throw new BadRequestException('email must be an email');
    return value;
  }
}

@Module({
  imports: [RateLimitModule.forRoot()],
  controllers: [AccountsController],
  providers: [{ provide: APP_PIPE, useClass: SignupValidation }],
})
class SignupApp {}

export const scenario: HttpScenario = {
  kind: 'http',
  module: SignupApp,
  async run(http) {
    for (let i = 0; i < 5; i++)
      assert.equal((await http.post('/accounts', { email: 'not an address' })).status, 400);
    for (let i = 0; i < 3; i++)
      assert.equal((await http.post('/accounts', { email: `a${i}@example.com` })).status, 201);
    const fourth = await http.post('/accounts', { email: 'a3@example.com' });
    assert.equal(fourth.status, 429, 'three accounts a day, the failed forms given back');
  },
};
