// A Nest 11 application in CommonJS (no "type": "module"), loading the packed ESM package with
// require() through Node's require(esm). The sample's routes, each decorator applied by hand the
// way tsc's output would, so the app needs no compiler. Memory store. @nestjs/terminus is not
// installed: the module boots all the same, and its health indicator answers a plain result.
require('reflect-metadata');
const { Controller, Get, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const {
  RateLimit,
  RateLimitHealthIndicator,
  RateLimitModule,
  SkipRateLimit,
} = require('nest-rate-limit');
// The testing entry, through the package's exports map, as an app's tests would require it.
const { RateLimitTesting, TestClock } = require('nest-rate-limit/testing');
// The console's entry, behind a guard instance that wants X-Admin-Token: $ADMIN_TOKEN.
const { RateLimitConsoleModule } = require('nest-rate-limit/console');
const adminOnly = {
  canActivate: (context) =>
    context.switchToHttp().getRequest().headers['x-admin-token'] === process.env.ADMIN_TOKEN,
};

if (new TestClock(0).advance('1m') !== 60_000 || typeof RateLimitTesting.reset !== 'function') {
  throw new Error('nest-rate-limit/testing did not load as published');
}

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

class AppModule {}
Module({
  imports: [RateLimitModule.forRoot(), RateLimitConsoleModule.forRoot({ guard: adminOnly })],
  controllers: [HelloController, ItemsController],
})(AppModule);

NestFactory.create(AppModule, { logger: ['error', 'warn'] })
  .then(async (app) => {
    const health = (await app.get(RateLimitHealthIndicator).isHealthy('rate-limit'))['rate-limit'];
    if (health.status !== 'up' || health.store !== 'memory') {
      throw new Error(`the health indicator answered ${JSON.stringify(health)}`);
    }
    return app.listen(Number(process.env.PORT), '127.0.0.1');
  })
  .then(() => console.log(`listening on ${process.env.PORT}, Node ${process.version}`));
