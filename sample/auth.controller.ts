import {
  Body,
  Controller,
  type ExecutionContext,
  HttpCode,
  Post,
  UnauthorizedException,
} from '@nestjs/common';
import { RateLimit, requestOf } from 'nest-rate-limit';

interface Credentials {
  username?: string;
  password?: string;
}

const username = (ctx: ExecutionContext) => requestOf<{ body?: Credentials }>(ctx)?.body?.username;

@Controller('auth')
export class AuthController {
  /**
   * Five wrong passwords for one account, from any address, lock that account out for 15
   * minutes; right passwords never count. Try: curl -i -d username=ann -d password=x
   * localhost:3000/auth/login (six times), then with password=open-sesame. Logins at once (tabs,
   * retries) that find five still in flight wait for their outcomes, up to 2 s, rather than be
   * turned away. While Redis is down, logins are refused (503) rather than counted per instance.
   */
  @RateLimit({
    period: '15m',
    threshold: 5,
    count: 'failures',
    blockDuration: '15m',
    tracker: username,
    onStoreError: 'deny',
  })
  @Post('login')
  @HttpCode(200)
  login(@Body() { username, password }: Credentials) {
    if (password !== 'open-sesame') throw new UnauthorizedException('Wrong username or password');
    return { welcome: username };
  }
}
