// Login brute force, from a service: five wrong passwords, then the account is refused; right
// passwords are given back and never use up the attempts.
import { Module } from '@nestjs/common';
import { RateLimitException, RateLimitModule } from 'nest-rate-limit';
import { AuthService, LoginAttempts } from './login-service.js';
import { assert, type ProviderScenario } from './support.js';

@Module({
  imports: [RateLimitModule.forRoot()],
  providers: [AuthService, LoginAttempts],
})
class LoginApp {}

export const scenario: ProviderScenario = {
  kind: 'providers',
  module: LoginApp,
  async run(app) {
    const attempts = app.get(LoginAttempts);
    for (let i = 0; i < 10; i++)
      assert.deepEqual(await attempts.verify('ann', 'ann'), { id: 'ann' });

    for (let i = 0; i < 5; i++) assert.equal(await attempts.verify('bob', 'guess'), undefined);
    await assert.rejects(attempts.verify('Bob', 'bob'), RateLimitException, 'locked out');
  },
};
