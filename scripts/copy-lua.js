// tsc compiles TypeScript only; the Lua scripts are read at runtime from beside the code that runs
// them: the algorithms' and the overrides'.
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
  mkdirSync(to, { recursive: true });
  for (const file of readdirSync(from)) {
    if (file.endsWith('.lua')) cpSync(`${from}/${file}`, `${to}/${file}`);
  }
}
