// A Nest 12 application in ESM, importing the packed package, with its limits shared through
// Redis by a node-redis client (REDIS_URL). The sample's routes, decorators applied by hand.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RateLimit, RateLimitModule, SkipRateLimit } from 'nest-rate-limit';
// The testing entry, through the package's exports map, as an app's tests would import it.
import { RateLimitTesting, TestClock } from 'nest-rate-limit/testing';
// The console's entry, behind a guard instance that wants X-Admin-Token: $ADMIN_TOKEN.
import { RateLimitConsoleModule } from 'nest-rate-limit/console';
import { createClient } from 'redis';

function decorateMethod(cls, name, ...decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(cls.prototype, name);
  for (const decorate of decorators.reverse()) decorate(cls.prototype, name, descriptor);
}

class HelloController {
  sayHi() {
    return { message: 'Hi!' };
  }
}
decorateMethod(HelloController, 'sayHi', RateLimit({ period: 30, threshold: 2 }), Get('sayHi'));
Controller('hello')(HelloController);

class ItemsController {
  health() {
    return { status: 'ok' };
  }
}
decorateMethod(ItemsController, 'health', SkipRateLimit(), Get('health'));
Controller('items')(ItemsController);

if (new TestClock(0).advance('1m') !== 60_000 || typeof RateLimitTesting.reset !== 'function') {
  throw new Error('nest-rate-limit/testing did not load as published');
}

const redis = createClient({ url: process.env.REDIS_URL });
redis.on('error', (error) => console.error('redis:', error.message));
await redis.connect();

const adminOnly = {
  canActivate: (context) =>
    context.switchToHttp().getRequest().headers['x-admin-token'] === process.env.ADMIN_TOKEN,
};

class AppModule {}
Module({
  imports: [
    RateLimitModule.forRoot({ redis, keyPrefix: `smoke-${process.pid}` }),
    RateLimitConsoleModule.forRoot({ guard: adminOnly }),
  ],
  controllers: [HelloController, ItemsController],
})(AppModule);

const app = await NestFactory.create(AppModule, { logger: ['error', 'warn', 'log'] });
await app.listen(Number(process.env.PORT), '127.0.0.1');
console.log(`listening on ${process.env.PORT}, Node ${process.version}`);
