// tsc compiles TypeScript only; the Lua scripts are read at runtime from beside the code that runs
// them: the algorithms' (their shared scripts, and each algorithm's own in `kinds/`), the
// overrides' and the console's activity.
// Usage: node scripts/copy-lua.js [algorithms destination] (default dist/algorithms); the
// overrides' and activity's scripts go to the folders of those names beside it.
import { cpSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

const destination = process.argv[2] ?? 'dist/algorithms';
const folders = [
  ['lib/algorithms', destination],
  ['lib/overrides', join(dirname(destination), 'overrides')],
  ['lib/activity', join(dirname(destination), 'activity')],
];
for (const [from, to] of folders) {
  for (const file of readdirSync(from, { recursive: true })) {
    if (!file.endsWith('.lua')) continue;
    mkdirSync(dirname(join(to, file)), { recursive: true });
    cpSync(join(from, file), join(to, file));
  }
}
