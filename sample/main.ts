import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { startMetrics } from './metrics.js';

const port = Number(process.env.PORT ?? 3000);
// Before the app: the rate-limit module takes its meter from the global provider as it starts.
startMetrics();
const app = await NestFactory.create(AppModule);
app.enableShutdownHooks();
await app.listen(port);
Logger.log(`Try: curl -i localhost:${port}/hello/sayHi (three times)`, 'Sample');
