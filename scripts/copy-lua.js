// tsc compiles TypeScript only; the Lua scripts are read at runtime from beside the algorithms.
// Usage: node scripts/copy-lua.js [destination folder] (default dist/algorithms)
import { cpSync, readdirSync } from 'node:fs';

const destination = process.argv[2] ?? 'dist/algorithms';
for (const file of readdirSync('lib/algorithms')) {
  if (file.endsWith('.lua')) cpSync(`lib/algorithms/${file}`, `${destination}/${file}`);
}
