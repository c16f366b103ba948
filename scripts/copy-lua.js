// tsc compiles TypeScript only; the Lua scripts are read at runtime from beside the code that runs
// them: the algorithms' (their shared scripts, and each algorithm's own in `kinds/`) and the
// overrides'.
// Usage: node scripts/copy-lua.js [algorithms destination] (default dist/algorithms); the
// overrides' script goes to the `overrides` folder beside it.
import { cpSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

const destination = process.argv[2] ?? 'dist/algorithms';
const folders = [
  ['lib/algorithms', destination],
  ['lib/overrides', join(dirname(destination), 'overrides')],
];
for (const [from, to] of folders) {
  for (const file of readdirSync(from, { recursive: true })) {
    if (!file.endsWith('.lua')) continue;
    mkdirSync(dirname(join(to, file)), { recursive: true });
    cpSync(join(from, file), join(to, file));
  }
}
