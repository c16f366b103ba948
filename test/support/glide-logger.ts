/**
 * GLIDE's core logs every failed connection and timeout that the fault and health specs cause on
 * purpose, so its logger is off unless `GLIDE_LOG` names a level (`error`, `warn`, `info`,
 * `debug` or `trace`): `GLIDE_LOG=warn npm test` shows them again. A spec file loads GLIDE anew,
 * whose logger starts at its default, so this runs wherever a spec loads GLIDE; never in the
 * setup file, which would load GLIDE into every spec file, those that use no GLIDE client too.
 */
import { Logger, type LevelOptions } from '@valkey/valkey-glide';

Logger.setLoggerConfig((process.env.GLIDE_LOG as LevelOptions | undefined) ?? 'off');
