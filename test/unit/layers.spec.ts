/**
 * The layers of `lib/`, as docs/architecture.md lists them: a file imports its own folder and the
 * layers below its own, never a layer above and never another folder of its own layer, and no
 * import goes round in a cycle, within a folder or across folders.
 */
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cyclesOf, type Import, importsUnder, specifiersOf } from '../support/import-graph.js';

/**
 * Top to bottom; the folders of one layer know nothing of each other. docs/architecture.md's
 * "Layers" table lists the same, in the same order.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['index.ts', 'testing/', 'console/'],
  ['module/'],
  ['route/', 'service/', 'health/'],
  ['flow/', 'overrides/', 'activity/'],
  ['templates/'],
  ['keys/', 'options/'],
  ['transports/'],
  ['rate-limit.exception.ts'],
  ['stores/'],
  ['telemetry/'],
  ['store-contract/'],
  ['policy/'],
  ['algorithms/'],
  ['rate-limit.constants.ts'],
];

const lib = fileURLToPath(new URL('../../lib', import.meta.url));
const architecture = fileURLToPath(new URL('../../docs/architecture.md', import.meta.url));

/** The folder (`route/`) or top-level file (`index.ts`) a path under `lib/` belongs to. */
function partOf(path: string): string {
  const slash = path.indexOf('/');
  return slash === -1 ? path : path.slice(0, slash + 1);
}

const layerOf = new Map(LAYERS.flatMap((parts, layer) => parts.map((part) => [part, layer])));

/** Why an import breaks the order, or undefined when it keeps it. */
function breach({ from, to }: Import): string | undefined {
  const [own, other] = [partOf(from), partOf(to)];
  if (own === other) return undefined;
  const [mine, theirs] = [layerOf.get(own), layerOf.get(other)];
  if (mine === undefined || theirs === undefined) return `${from} → ${to} (a part in no layer)`;
  if (theirs > mine) return undefined;
  const how = theirs === mine ? 'in its own layer' : `${mine - theirs} layer(s) up`;
  return `${from} → ${to} (${own} may not import ${other}: ${how})`;
}

/** The folders of the "Layers" table of docs/architecture.md, a row per layer. */
function documentedLayers(): string[][] {
  const page = readFileSync(architecture, 'utf8');
  const section = page.slice(page.indexOf('\n## Layers\n'));
  const table = section.slice(section.indexOf('\n|') + 1).split(/\n(?!\|)/)[0];
  return table
    .split('\n')
    .slice(2)
    .map((row) => [...row.split('|')[2].matchAll(/`lib\/([^`]+)`/g)].map(([, part]) => part));
}

describe('the layers of lib/', () => {
  const imports = importsUnder(lib);

  it('hold every folder and top-level file of lib/, each once', () => {
    const parts = readdirSync(lib, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || entry.name.endsWith('.ts'))
      .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name));
    expect(LAYERS.flat().sort()).toEqual(parts.sort());
  });

  it('are the ones docs/architecture.md lists, in its order', () => {
    expect(documentedLayers()).toEqual(LAYERS);
  });

  it('are kept: no file imports a layer above its own, nor another folder of its own', () => {
    expect(imports.length).toBeGreaterThan(100);
    expect(imports.map(breach).filter((b) => b !== undefined)).toEqual([]);
  });

  it('hold no import cycle', () => {
    expect(cyclesOf(imports).map((cycle) => cycle.join(' → '))).toEqual([]);
  });
});

describe('the import graph the layers are checked on', () => {
  it('has every form of import, and nothing a comment or a string only mentions', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'layers-')), 'every-form.ts');
    writeFileSync(
      file,
      [
        "import { a } from './a.js';",
        "import type { B } from './b.js';",
        "import { type C } from './c.js';",
        "import './d.js';",
        "export { e } from './e.js';",
        "export type * from './f.js';",
        "const g = () => import('./g.js');",
        "let h: import('./h.js').H;",
        "// import { x } from './comment.js';",
        'const s = "import(\'./string.js\')";',
      ].join('\n'),
    );
    expect(specifiersOf(file)).toEqual([
      './a.js',
      './b.js',
      './c.js',
      './d.js',
      './e.js',
      './f.js',
      './g.js',
      './h.js',
    ]);
  });

  it('tells up from down, and a folder of the same layer', () => {
    expect(breach({ from: 'route/a.ts', to: 'stores/b.ts' })).toBeUndefined();
    expect(breach({ from: 'stores/b.ts', to: 'stores/memory/c.ts' })).toBeUndefined();
    expect(breach({ from: 'stores/b.ts', to: 'route/a.ts' })).toMatch(
      /stores\/ may not import route\//,
    );
    expect(breach({ from: 'route/a.ts', to: 'service/b.ts' })).toMatch(/in its own layer/);
  });

  it('finds a cycle and the path round it', () => {
    const cycle = [
      { from: 'a.ts', to: 'b.ts' },
      { from: 'b.ts', to: 'c.ts' },
      { from: 'c.ts', to: 'a.ts' },
      { from: 'c.ts', to: 'd.ts' },
    ];
    expect(cyclesOf(cycle)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
    expect(cyclesOf([{ from: 'a.ts', to: 'a.ts' }])).toEqual([['a.ts', 'a.ts']]);
    expect(cyclesOf(cycle.slice(0, 2))).toEqual([]);
  });
});
