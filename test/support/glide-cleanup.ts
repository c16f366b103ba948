/**
 * Runs before each spec file. GLIDE's core logs every failed connection and timeout the fault
 * and health specs cause on purpose, so its logger is off unless `GLIDE_LOG` names a level
 * (`error`, `warn`, `info`, `debug` or `trace`): `GLIDE_LOG=warn npm test` shows them again.
 * After the file, no GLIDE client outlives the spec that opened it.
 */
import { Logger, type LevelOptions } from '@valkey/valkey-glide';
import { closeGlideClients } from './glide-clients.js';

Logger.setLoggerConfig((process.env.GLIDE_LOG as LevelOptions | undefined) ?? 'off');

afterAll(() => closeGlideClients());
