import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '.svc-data/**',
      'scripts/**',
      'deploy/**',
      'eslint.config.js',
      // The bin loaders: a few lines of plain JS that import the built dist.
      'cli/bin/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // What a service reads from NATS is decoded against its schema (decodeMessage, decodeOrDrop):
    // decodeJson is an unchecked cast, left for tests and tools.
    files: ['services/*/src/**/*.ts', 'proto/src/**/*.ts', 'cli/src/**/*.ts'],
    ignores: ['proto/src/job-store.ts', 'proto/src/mod.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@svc/proto',
              importNames: ['decodeJson'],
              message: 'Decode what NATS holds against its schema: decodeMessage or decodeOrDrop.',
            },
          ],
          patterns: [
            {
              group: ['**/job-store.js'],
              importNames: ['decodeJson'],
              message: 'Decode what NATS holds against its schema: decodeMessage or decodeOrDrop.',
            },
          ],
        },
      ],
    },
  },
  {
    // The device layer talks to devices only: it knows nothing of the actor host nor of NATS
    // (docs/architecture.md). This block replaces the one above for these files, so it repeats
    // its rule.
    files: ['services/device-actor/src/device/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@svc/proto',
              importNames: ['decodeJson'],
              message: 'Decode what NATS holds against its schema: decodeMessage or decodeOrDrop.',
            },
          ],
          patterns: [
            {
              group: ['**/actor-host/**', '@nats-io/*'],
              message: 'The device layer imports nothing from the actor host or NATS.',
            },
          ],
        },
      ],
    },
  },
  {
    // Tests assert on loosely typed JSON bodies and drive raw protocols.
    files: ['**/test/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // node:test's test() returns a promise the runner tracks itself.
      '@typescript-eslint/no-floating-promises': 'off',
    },
  },
  {
    // The committed bin entries are plain JavaScript outside every tsconfig.
    files: ['**/bin/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: globals.node,
    },
  },
);
