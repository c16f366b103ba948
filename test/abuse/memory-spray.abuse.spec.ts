/**
 * A spray of a million distinct trackers against the memory store, in a process whose heap is
 * 256 MB: the store must stay within its byte budget, so the process neither runs out of heap
 * nor stops answering, and a hot key is still limited exactly afterwards. Run on the memory store
 * itself and on the `'memory'` fallback of a module whose Redis is unreachable. Each spray runs in
 * a separate Node process with the built library, since the heap limit is per process.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from '@jest/globals';

const BUILD = 'dist-test/memory-spray';
const SPRAY = 1_000_000;
const HEAP_MB = 256;

interface Progress {
  sprayed: number;
  heapMb: number;
  keys?: number;
}

interface SprayResult {
  answered: number;
  allowed: number;
  remembered: boolean;
  forgotten: boolean;
  hot: boolean[];
  keys?: number;
  peakHeapMb: number;
  heapAfterGcMb: number;
  heapLimitMb: number;
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  progress: Progress[];
  result: SprayResult | undefined;
  stderr: string;
}

/** Runs the spray in its own small heap and collects what it printed. */
function spray(mode: 'store' | 'fallback', ...args: string[]): Promise<Run> {
  const child = spawn(
    'node',
    [
      `--max-old-space-size=${HEAP_MB}`,
      '--expose-gc',
      `${BUILD}/memory-spray.mjs`,
      mode,
      String(SPRAY),
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const run: Run = { code: null, signal: null, progress: [], result: undefined, stderr: '' };
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      const parsed = JSON.parse(line) as Progress | { result: SprayResult };
      if ('result' in parsed) run.result = parsed.result;
      else run.progress.push(parsed);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ ...run, code, signal }));
  });
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function expectSurvived(run: Run): SprayResult {
  const last = run.progress[run.progress.length - 1];
  const where = `after ${last?.sprayed ?? 0} trackers (heap ${last?.heapMb.toFixed(0)} MB)`;
  expect({ code: run.code, signal: run.signal, where, stderr: run.stderr.slice(-500) }).toEqual({
    code: 0,
    signal: null,
    where,
    stderr: '',
  });
  const result = run.result!;
  // Every decision was answered, and each new tracker was allowed its one request.
  expect(result.answered).toBe(SPRAY);
  expect(result.allowed).toBe(SPRAY);
  // The store bounded itself by dropping the oldest trackers, and still counts recent ones.
  expect(result.remembered).toBe(true);
  expect(result.forgotten).toBe(true);
  // A hot key afterwards: exactly its threshold (5) allowed, then rejected.
  expect(result.hot).toEqual([true, true, true, true, true, false, false]);
  // The budget is a quarter of the heap limit, so what is left after a GC stays well inside it.
  expect(result.heapAfterGcMb).toBeLessThan(result.heapLimitMb / 2);
  return result;
}

describe('a spray of a million distinct trackers in a 256 MB heap', () => {
  beforeAll(async () => {
    const run = promisify(execFile);
    await run('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', BUILD]);
    await run('node', ['scripts/copy-lua.js', `${BUILD}/algorithms`]);
    copyFileSync('test/abuse/fixtures/memory-spray.mjs', `${BUILD}/memory-spray.mjs`);
  }, 120_000);

  it('leaves the memory store answering, within its budget, still limiting a hot key', async () => {
    const result = expectSurvived(await spray('store'));
    // Bounded by bytes, not emptied: a useful number of trackers is still held.
    expect(result.keys).toBeGreaterThan(50_000);
    expect(result.keys).toBeLessThan(SPRAY);
  }, 120_000);

  it('leaves the memory fallback answering when Redis is unreachable, still limiting a hot key', async () => {
    const port = await closedPort();
    const result = expectSurvived(await spray('fallback', `redis://127.0.0.1:${port}`));
    expect(result.keys).toBeGreaterThan(50_000);
    expect(result.keys).toBeLessThan(SPRAY);
  }, 120_000);
});
