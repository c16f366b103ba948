/** `npm run bench -- [--only decisions,alone,cluster,latency,flood,memory,http,console] [--quick] [--write]` */

export const SECTIONS = [
  'decisions',
  'alone',
  'cluster',
  'latency',
  'flood',
  'memory',
  'http',
  'console',
] as const;
export type Section = (typeof SECTIONS)[number];

export interface BenchOptions {
  readonly sections: ReadonlySet<Section>;
  readonly quick: boolean;
  readonly write: boolean;
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  let sections = new Set<Section>(SECTIONS);
  let quick = false;
  let write = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') quick = true;
    else if (arg === '--write') write = true;
    else if (arg === '--only' || arg.startsWith('--only=')) {
      const list = arg === '--only' ? argv[++i] : arg.slice('--only='.length);
      const names = (list ?? '').split(',').filter(Boolean);
      const unknown = names.filter((n) => !(SECTIONS as readonly string[]).includes(n));
      if (names.length === 0 || unknown.length > 0) {
        throw new Error(`--only takes a comma list of ${SECTIONS.join(', ')}; got "${list}"`);
      }
      sections = new Set(names as Section[]);
    } else {
      throw new Error(`unknown argument "${arg}"; use --only <sections>, --quick, --write`);
    }
  }
  // Smoke-check numbers must never end up in the published results.
  if (quick && write) throw new Error('--quick results are not written; drop one of the two');
  return { sections, quick, write };
}
