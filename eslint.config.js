import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const PROTO_RUNTIME =
  'proto holds the contract only: runtime goes to a package named for what it does (docs/architecture.md).';

/** The imports proto may not use (and, outside codec.ts and mod.ts, the unchecked decodeJson). */
function protoRuntimeBans(withDecodeJson) {
  return [
    {
      paths: [
        { name: 'node:net', allowImportNames: ['isIP'], message: PROTO_RUNTIME },
        ...['node:http', 'node:https', 'node:dns', 'node:dns/promises', 'pino', 'prom-client'].map(
          (name) => ({ name, message: PROTO_RUNTIME }),
        ),
      ],
      patterns: [
        { group: ['@nats-io/*', '@opentelemetry/*'], message: PROTO_RUNTIME },
        // Every other package depends on proto: importing one back would be a cycle.
        { group: ['@svc/*'], message: 'proto depends on no other svc package.' },
        ...(withDecodeJson
          ? [
              {
                group: ['**/codec.js'],
                importNames: ['decodeJson'],
                message:
                  'Decode what NATS holds against its schema: decodeMessage or decodeOrDrop.',
              },
            ]
          : []),
      ],
    },
  ];
}

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
      // One program for every file (tsconfig.eslint.json), not one per project as the project
      // service builds: the same types (packages resolve each other's built declarations
      // either way), linted in 40 s instead of 108 s on CI's two cores.
      parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
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
    ignores: ['proto/src/codec.ts', 'proto/src/mod.ts'],
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
              group: ['**/codec.js'],
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
    // (docs/architecture.md); nor do the drivers it runs. This block replaces the one above for
    // these files, so it repeats its rule.
    files: ['services/device-actor/src/device/**/*.ts', 'drivers/src/**/*.ts'],
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
              group: ['**/actor-host/**', '@nats-io/*', '@svc/nats', '@svc/jobs'],
              message: 'The device layer imports nothing from the actor host or NATS.',
            },
          ],
        },
      ],
    },
  },
  {
    // proto is the contract (schemas, subjects with their builders and parsers, codecs and
    // validation, error codes, platform names): no NATS client, logger, metrics, tracing or
    // network I/O. Runtime lives in packages named for what it does (jobs, nats, telemetry,
    // device-access, webhooks, service-main). isIP is a pure check of an address's syntax.
    files: ['proto/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', ...protoRuntimeBans(true)],
    },
  },
  {
    // The codec defines decodeJson and mod.ts re-exports it.
    files: ['proto/src/codec.ts', 'proto/src/mod.ts'],
    rules: {
      'no-restricted-imports': ['error', ...protoRuntimeBans(false)],
    },
  },
  {
    // A job's status is written, and its events and cancels are published, only by the named
    // operations of @svc/jobs (enqueue, start, finish, fail, cancel, drain, ...): no other
    // writer of the `svc-jobs` bucket, no other publisher on a job's event subjects.
    files: ['services/*/src/**/*.ts', 'cli/src/**/*.ts', 'proto/src/**/*.ts'],
    // Readers of the bucket (job lists, the dispatcher's ended check) and its creation.
    ignores: [
      'services/gateway/src/routes/job-queries.ts',
      'services/dispatcher/src/dispatcher.ts',
      'proto/src/topology.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            'MemberExpression[object.name=/^(Subjects|MessageIds)$/][property.name=/^(jobEvent|batchJobEvent|cancel)$/]',
          message: "A job's events and cancels are published by @svc/jobs: use its operations.",
        },
        {
          selector: "MemberExpression[object.name='Buckets'][property.name='jobs']",
          message: 'Job records are written by @svc/jobs only (Jobs.open and its operations).',
        },
      ],
    },
  },
  {
    // proto's test fixtures are for tests only: no runtime module imports them. The
    // typescript-eslint twin of no-restricted-imports, so that the blocks above keep theirs.
    files: ['**/src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@svc/proto/test-fixtures',
              message: 'Test fixtures are for tests: runtime code builds its own data.',
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
