import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The complete example of "Testing your app" is a spec the suite runs: the page shows it as it is.
const root = process.cwd();
const MARKER = '<!-- the example: test/e2e/testing-your-app.e2e.spec.ts -->';

describe('the "Testing your app" page', () => {
  it('shows, as its complete example, the spec the suite runs, line for line', () => {
    const page = readFileSync(join(root, 'docs/testing.md'), 'utf8');
    const at = page.indexOf(MARKER);
    expect(at).toBeGreaterThanOrEqual(0);
    const block = /```ts\n([\s\S]*?)```/.exec(page.slice(at + MARKER.length));
    const spec = readFileSync(join(root, 'test/e2e/testing-your-app.e2e.spec.ts'), 'utf8');
    expect(block?.[1]).toBe(spec);
  });
});
