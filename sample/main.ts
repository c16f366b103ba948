import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

const port = Number(process.env.PORT ?? 3000);
const app = await NestFactory.create(AppModule);
app.enableShutdownHooks();
await app.listen(port);
Logger.log(`Try: curl -i localhost:${port}/hello/sayHi (three times)`, 'Sample');
