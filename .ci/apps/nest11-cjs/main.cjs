// A Nest 11 application in CommonJS (no "type": "module"), loading the packed ESM package with
// require() through Node's require(esm). The sample's routes, each decorator applied by hand the
// way tsc's output would, so the app needs no compiler. Memory store.
require('reflect-metadata');
const { Controller, Get, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { RateLimit, RateLimitModule, SkipRateLimit } = require('nest-rate-limit');

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
Module({ imports: [RateLimitModule.forRoot()], controllers: [HelloController, ItemsController] })(
  AppModule,
);

NestFactory.create(AppModule, { logger: ['error', 'warn'] })
  .then((app) => app.listen(Number(process.env.PORT), '127.0.0.1'))
  .then(() => console.log(`listening on ${process.env.PORT}, Node ${process.version}`));
