// Login brute force: concurrent right passwords all get in and lock nothing out; twenty
// concurrent wrong ones reach the handler five times, the rest get 429, and the account is
// locked out, the right password included.
import { Injectable, Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { RateLimitTesting } from 'nest-rate-limit/testing';
import { AuthController, AuthService } from './login.js';
import { assert, atOnce, type HttpScenario, statuses } from './support.js';

/** The recipe's AuthService, counting the attempts that reach the handler. */
@Injectable()
class CountedAuthService extends AuthService {
  checked = 0;

  override verify(username: string, password: string) {
    this.checked++;
    return super.verify(username, password);
  }
}

@Module({
  imports: [RateLimitModule.forRoot()],
  controllers: [AuthController],
  providers: [{ provide: AuthService, useClass: CountedAuthService }],
})
class LoginApp {}

// The recipe's AuthService lets in a password equal to the username.
const login = (username: string, password: string) => ({ username, password });

export const scenario: HttpScenario = {
  kind: 'http',
  module: LoginApp,
  async run(http, app) {
    const right = await atOnce(8, () => http.post('/auth/login', login('alice', 'alice')));
    assert.deepEqual(statuses(right), { 200: 8 }, 'eight concurrent right passwords');
    assert.equal((await http.post('/auth/login', login('alice', 'alice'))).status, 200);

    // A fresh per-client budget: the scenario's calls all come from one address.
    await RateLimitTesting.reset(app);
    const auth = app.get(AuthService) as CountedAuthService;
    auth.checked = 0;
    const wrong = await atOnce(20, () => http.post('/auth/login', login('bob', 'guess')));
    assert.deepEqual(statuses(wrong), { 401: 5, 429: 15 }, 'twenty concurrent wrong passwords');
    assert.equal(auth.checked, 5, 'five reached the handler');
    const locked = await http.post('/auth/login', login('bob', 'bob'));
    assert.equal(locked.status, 429, 'the right password during the lock-out');
    assert.ok(Number(locked.headers.get('retry-after')) > 14 * 60, 'locked out for 15 minutes');
    assert.equal((await http.post('/auth/login', login('carol', 'carol'))).status, 200);
  },
};
