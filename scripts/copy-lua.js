// tsc compiles TypeScript only; the Lua scripts are read at runtime from beside the algorithms.
import { cpSync, readdirSync } from 'node:fs';

for (const file of readdirSync('lib/algorithms')) {
  if (file.endsWith('.lua')) cpSync(`lib/algorithms/${file}`, `dist/algorithms/${file}`);
}
