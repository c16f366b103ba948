import {
  type CanActivate,
  type ExecutionContext,
  Injectable,
  UnauthorizedException,
} from '@nestjs/common';
import { isAdminToken } from './admin-limits.controller.js';

/**
 * The console's guard: the admin token as `X-Admin-Token` (scripts), or as the password of HTTP
 * Basic authentication, whatever the user name (a browser asks for it), which the console's log
 * then names. Anything else gets 401 and the challenge that makes a browser ask.
 */
@Injectable()
export class ConsoleGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const request = http.getRequest<{ headers: Record<string, unknown>; user?: object }>();
    const { headers } = request;
    if (isAdminToken(headers['x-admin-token'])) {
      // Names the acting user in the console's log: `User "script" blocked …`.
      request.user = { username: 'script' };
      return true;
    }
    const basic = /^Basic (.+)$/.exec(String(headers.authorization ?? ''));
    const [name, ...password] = basic
      ? Buffer.from(basic[1], 'base64').toString().split(':')
      : [''];
    if (isAdminToken(password.join(':'))) {
      request.user = { username: name || 'admin' };
      return true;
    }
    // Express's response and Fastify's reply both have header().
    http
      .getResponse<{ header(name: string, value: string): void }>()
      .header('WWW-Authenticate', 'Basic realm="rate limits"');
    throw new UnauthorizedException();
  }
}
