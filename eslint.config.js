// Lint configuration (ESLint 9, flat config). `npm run lint` runs it together with `prettier --check`;
// Prettier owns the layout, so no rule here is about spacing or line length.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX, createNodeResolver } from 'eslint-plugin-import-x';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'coverage/',
      '.data/',
      '.ci/out/',
      'bench/results/',
      'bench/.build/',
      'scratch/',
      'loadtest-results/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.mts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.mts'] },
      'import-x/external-module-folders': ['node_modules'],
      // Sources import each other as `./x.js` (NodeNext); the resolver maps that to the `.ts` file so the
      // cycle rule sees the real graph.
      'import-x/resolver-next': [
        createNodeResolver({
          extensions: ['.ts', '.mjs', '.js', '.json'],
          extensionAlias: { '.js': ['.ts', '.js'], '.mjs': ['.mts', '.mjs'] },
        }),
      ],
    },
    rules: {
      // A cycle makes the load order decide what a module sees at start; every one is an error.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-self-import': 'error',
      // The access layer is below the backend (the backend's routes call its service layer): a rule both
      // need lives in access/ or lower, never in a backend domain.
      'import-x/no-restricted-paths': ['error', { zones: [{ target: './src/access', from: './src/backend' }] }],
      'import-x/no-duplicates': 'error',
      // Unused names are dead code. A parameter a signature must keep (an interface's, a callback's
      // position) is written with a leading underscore; nothing else may use one.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'all',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrors: 'none',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'off',
      // Matching control characters is what the path, header and log validators are for.
      'no-control-regex': 'off',
      'prefer-const': ['error', { destructuring: 'all' }],
    },
  },
  {
    // A backend domain reaches another only through that one's index.ts, which says what it offers;
    // its other files may change without the rest of the backend noticing.
    files: ['src/backend/*/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./[a-z-]+/(?!index\\.js$)[^/]+$',
              message: "Import another backend domain through its index.ts (CONTRIBUTING: 'A domain').",
            },
          ],
        },
      ],
    },
  },
  {
    // Tests and benchmarks stub freely; `any` in a fake is not a hole in the product's types.
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
