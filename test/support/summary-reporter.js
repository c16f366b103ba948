// Prints plain closing lines any CI log reader understands: "Tests: N passed, N failed", then one
// line per project (redis, valkey) with its tests per client kind, and why a project did not run.

// The client kind a test runs on, as its titles name it ("through ioredis", "(node-redis)", ...).
const KIND = /(?<![\w@-])(node-redis@5|node-redis|ioredis|iovalkey|glide|memory)(?![\w@-])/;

const projectOf = (file) =>
  typeof file.displayName === 'string' ? file.displayName : (file.displayName?.name ?? 'tests');

export default class SummaryReporter {
  constructor(_globalConfig, options = {}) {
    this.notRun = options.notRun;
  }

  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    const lines = [
      `Tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed${tail}`,
    ];
    const projects = [...countByProject(results.testResults)].sort(([a], [b]) =>
      a.localeCompare(b),
    );
    for (const [project, { passed, failed, kinds }] of projects) {
      const perKind = [...kinds].map(([kind, n]) => `${kind} ${n}`).join(', ');
      lines.push(`  ${project}: ${passed} passed, ${failed} failed (${perKind})`);
    }
    if (this.notRun) lines.push(this.notRun);
    process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}

/** Passed and failed tests per project, and the tests that ran per client kind (or none). */
function countByProject(files) {
  const projects = new Map();
  for (const file of files) {
    const name = projectOf(file);
    if (!projects.has(name)) projects.set(name, { passed: 0, failed: 0, kinds: new Map() });
    const project = projects.get(name);
    project.passed += file.numPassingTests;
    project.failed += file.numFailingTests;
    for (const test of file.testResults) {
      if (test.status !== 'passed' && test.status !== 'failed') continue;
      const kind = KIND.exec(test.fullName)?.[1] ?? 'no client named';
      project.kinds.set(kind, (project.kinds.get(kind) ?? 0) + 1);
    }
  }
  return projects;
}
