import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// The README is what a newcomer reads before `npm start`: what it says the sample serves must be
// what the sample serves.
const root = process.cwd();
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const sampleFiles = readdirSync(join(root, 'sample')).filter((f) => f.endsWith('.ts'));
const sample = new Map(sampleFiles.map((f) => [f, readFileSync(join(root, 'sample', f), 'utf8')]));

/** `GET /items/:id` for each handler of the sample's controllers. */
function sampleRoutes(): string[] {
  const routes: string[] = [];
  for (const source of sample.values()) {
    // The console's page, which its module mounts at its path ('/rate-limits' by default).
    const mounted = /RateLimitConsoleModule\.forRoot\(\{([^}]*)\}\)/.exec(source);
    if (mounted !== null) {
      routes.push(`GET ${/path: '([^']*)'/.exec(mounted[1])?.[1] ?? '/rate-limits'}`);
    }
    const base = /@Controller\('([^']*)'\)/.exec(source)?.[1];
    if (base === undefined) continue;
    for (const [, verb, path] of source.matchAll(
      /@(Get|Post|Put|Patch|Delete)\((?:'([^']*)')?\)/g,
    )) {
      routes.push(`${verb.toUpperCase()} /${[base, path].filter(Boolean).join('/')}`);
    }
  }
  return routes.sort();
}

function section(title: string): string {
  const start = readme.indexOf(`## ${title}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

describe('the README and the sample', () => {
  it('lists every route the sample serves, and no other', () => {
    const firstCells = [...section('The sample app').matchAll(/^\| (`[^|]*`) +\|/gm)];
    const listed = firstCells
      .flatMap(([, cell]) =>
        [...cell.matchAll(/`((?:GET|POST|PUT|PATCH|DELETE) [^`]+)`/g)].map((m) => m[1]),
      )
      .sort();
    expect(listed).toEqual(sampleRoutes());
    expect(listed.length).toBeGreaterThanOrEqual(8);
  });

  it("shows in its quick start the limits the sample's controllers declare", () => {
    const code = [...section('Quick start').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    const declared = [...code.join('\n').matchAll(/@RateLimit\(\{[^)]*\}\)/g)].map((m) => m[0]);
    expect(declared.length).toBeGreaterThanOrEqual(2);
    const sources = [...sample.values()].join('\n');
    for (const decorator of declared) expect(sources).toContain(decorator);
  });
});
