/** Jest runs the TypeScript sources as native ES modules (Nest 12 ships ESM only). */
export default {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^nest-rate-limit$': '<rootDir>/lib/index.ts',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  setupFilesAfterEnv: ['<rootDir>/test/support/glide-cleanup.ts'],
  testTimeout: 30_000,
  // A handle left open by one test (a client reconnecting, a timer) must fail loudly in that test,
  // not hang the run until CI gives up: exit once every test has finished.
  forceExit: true,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
