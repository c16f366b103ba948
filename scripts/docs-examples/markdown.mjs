// Finds the ```ts blocks of the markdown files, with their hidden preludes and recipe markers.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const FENCE = /^(\s*)(`{3,}|~{3,})\s*(ts|typescript)\s*$/;
const PRELUDE_START = /^\s*<!--\s*ts-prelude\s*$/;
const PRELUDE_END = /^\s*-->\s*$/;
const RECIPE = /^\s*<!--\s*recipe:\s*([a-z0-9-]+)(?:[:,]?\s+(.*?))?\s*-->\s*$/;
const RECIPES_HEADING = /^## Recipes\s*$/;

/** The markdown files whose examples are checked, relative to the root. */
export function markdownFiles(root) {
  const docs = join(root, 'docs');
  const pages = existsSync(docs)
    ? readdirSync(docs)
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => `docs/${name}`)
    : [];
  return ['README.md', ...pages];
}

/**
 * The ts blocks of one file, lines 1-based:
 * `{ file, codeLine, code, preludeLine, prelude, recipe, recipeLine, skipReason, inRecipes }`.
 * `codeLine` is the line of the block's first code line; `recipe` the name its marker gives, if
 * any (`'none'` with a `skipReason` for a block no scenario runs); `inRecipes` whether it stands
 * where every block must be a recipe (all of docs/recipes.md, and any `## Recipes` section).
 */
export function extractBlocks(root, file) {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks = [];
  let inRecipesSection = false;
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].startsWith('## ')) inRecipesSection = RECIPES_HEADING.test(lines[i]);
    const open = FENCE.exec(lines[i]);
    if (!open) {
      // Skip other fenced blocks whole, so a ```ts inside a ```markdown sample is not taken.
      const other = /^\s*(`{3,}|~{3,})/.exec(lines[i]);
      if (other) i = closingFence(lines, i, other[1]);
      continue;
    }
    const end = closingFence(lines, i, open[2]);
    const indent = open[1].length;
    const code = lines.slice(i + 1, end).map((line) => line.slice(indent));
    const prelude = preludeBefore(lines, i);
    const marker = recipeMarkerBefore(lines, prelude.preludeLine > 0 ? prelude.preludeLine - 1 : i);
    blocks.push({
      file,
      codeLine: i + 2,
      code,
      ...prelude,
      ...marker,
      inRecipes: file === 'docs/recipes.md' || inRecipesSection,
    });
    i = end;
  }
  return blocks;
}

/** The index of the line closing a fence opened at `start` with `marker`. */
function closingFence(lines, start, marker) {
  for (let j = start + 1; j < lines.length; j++) {
    const trimmed = lines[j].trim();
    if (trimmed.startsWith(marker[0].repeat(marker.length)) && /^[`~]+$/.test(trimmed)) return j;
  }
  return lines.length;
}

/** A `<!-- ts-prelude … -->` comment ending just before line index `fence`, if any. */
function preludeBefore(lines, fence) {
  let j = fence - 1;
  while (j >= 0 && lines[j].trim() === '') j--;
  if (j < 0 || !PRELUDE_END.test(lines[j])) return { preludeLine: 0, prelude: [] };
  const end = j;
  while (j >= 0 && !PRELUDE_START.test(lines[j])) {
    if (lines[j].includes('<!--') && j !== end) return { preludeLine: 0, prelude: [] };
    j--;
  }
  if (j < 0) return { preludeLine: 0, prelude: [] };
  return { preludeLine: j + 1, prelude: lines.slice(j + 1, end) };
}

/** A `<!-- recipe: name -->` line just before line index `start` (blank lines allowed). */
function recipeMarkerBefore(lines, start) {
  let j = start - 1;
  while (j >= 0 && lines[j].trim() === '') j--;
  const match = j >= 0 ? RECIPE.exec(lines[j]) : null;
  if (!match) return { recipe: undefined, recipeLine: 0, skipReason: undefined };
  return { recipe: match[1], recipeLine: j + 1, skipReason: match[2] };
}
