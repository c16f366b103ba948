/**
 * bench/RESULTS.md: the tables of the latest full run, followed by notes the maintainers write
 * by hand. Rewriting the tables keeps everything from the notes marker on.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export const NOTES_MARKER = '## Notes on missed targets';

const NOTES_PLACEHOLDER = [
  NOTES_MARKER,
  '',
  '<!-- Written by hand and kept by `npm run bench -- --write`: everything from the heading',
  'above to the end of the file survives a rewrite. Profiles and explanations go here. -->',
  '',
].join('\n');

export function writeResults(path: string, generated: string): void {
  const existing = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const at = existing.indexOf(`\n${NOTES_MARKER}\n`);
  const notes = at >= 0 ? existing.slice(at + 1) : NOTES_PLACEHOLDER;
  writeFileSync(path, `${generated.trimEnd()}\n\n${notes}`);
}
