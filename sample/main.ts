import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module.js';
import { startMetrics } from './metrics.js';

const port = Number(process.env.PORT ?? 3000);
// Before the app: the rate-limit module takes its meter from the global provider as it starts.
startMetrics();
const app = await NestFactory.create<NestExpressApplication>(AppModule);
// Behind a proxy, the hops to trust: otherwise every client counts as the proxy's address.
if (process.env.TRUST_PROXY) app.set('trust proxy', Number(process.env.TRUST_PROXY));
app.enableShutdownHooks();
await app.listen(port);
Logger.log(`Try: curl -i localhost:${port}/hello/sayHi (three times)`, 'Sample');
