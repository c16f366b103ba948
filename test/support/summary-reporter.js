// Prints plain closing lines any CI log reader understands: "Tests: N passed, N failed", then one
// line per project (redis, valkey) with its tests per client kind, and why a project did not run.

// The client kind a test runs on, as its titles name it ("through ioredis", "(node-redis)", ...).
const KIND = /(?<![\w@-])(node-redis@5|node-redis|ioredis|iovalkey|glide|memory)(?![\w@-])/;
const NONE = 'no client named';

// Kinds alphabetically, tests that name none last.
const byKind = ([a], [b]) => (a === NONE) - (b === NONE) || a.localeCompare(b);

const nameOf = (displayName) =>
  typeof displayName === 'string' ? displayName : (displayName?.name ?? 'tests');

const unrun = (broken) =>
  broken > 0 ? `, ${broken} file${broken === 1 ? '' : 's'} failed to run` : '';

export default class SummaryReporter {
  constructor(_globalConfig, options = {}) {
    this.notRun = options.notRun;
    this.projects = new Map();
  }

  // The project comes from the test's config: a file that failed to load has no displayName.
  onTestFileResult(test, file) {
    const name = nameOf(test.context.config.displayName);
    if (!this.projects.has(name)) {
      this.projects.set(name, { passed: 0, failed: 0, broken: 0, kinds: new Map() });
    }
    const project = this.projects.get(name);
    project.passed += file.numPassingTests;
    project.failed += file.numFailingTests;
    if (file.testExecError) project.broken += 1;
    for (const result of file.testResults) {
      if (result.status !== 'passed' && result.status !== 'failed') continue;
      const kind = KIND.exec(result.fullName)?.[1] ?? NONE;
      project.kinds.set(kind, (project.kinds.get(kind) ?? 0) + 1);
    }
  }

  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const lines = [
      `Tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed` +
        (skipped > 0 ? `, ${skipped} skipped` : '') +
        unrun(results.numRuntimeErrorTestSuites),
    ];
    const projects = [...this.projects].sort(([a], [b]) => a.localeCompare(b));
    for (const [project, { passed, failed, broken, kinds }] of projects) {
      const perKind = [...kinds].sort(byKind).map(([kind, n]) => `${kind} ${n}`);
      const tail = perKind.length > 0 ? ` (${perKind.join(', ')})` : '';
      lines.push(`  ${project}: ${passed} passed, ${failed} failed${unrun(broken)}${tail}`);
    }
    if (this.notRun) lines.push(this.notRun);
    process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}
