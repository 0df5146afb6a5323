// Lint configuration (ESLint 9, flat config). `npm run lint` runs it together with `prettier --check`;
// Prettier owns the layout, so no rule here is about spacing or line length.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX, createNodeResolver } from 'eslint-plugin-import-x';
import globals from 'globals';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('.', import.meta.url));
const src = (...names) => names.map((name) => `./src/${name}`);
// The boxes, bottom to top. A box imports the boxes below it and its own, nothing else of src/.
const FOUNDATION = ['config', 'http', 'db', 'ops'];
const STORE = ['limits'];
const ACCESS = ['access'];
const INTERFACES = ['gateway', 'backend', 'admin-api'];
const TOP = ['app', 'app.ts', 'cli', 'cli.ts', 'loadtest', 'openapi'];
// Standalone: the verifier is a package services install (it imports nothing of src/, so any box may
// import it); the console runs in a browser (nothing of src/ imports it, it imports nothing of src/).
const BROWSER = ['console'];
const interfaceZone = (name) => ({
  target: src(name),
  from: src(...INTERFACES.filter((other) => other !== name), ...TOP, ...BROWSER),
  message: `${name}/ is an interface: it imports access, limits and the foundation, never another interface (gateway, backend, admin-api) nor the programs above.`,
});
const standaloneZone = (name, why) => ({
  target: src(name),
  from: './src',
  except: [`./${name}`],
  message: `${name}/ ${why}: it imports nothing of src/ outside ${name}/.`,
});
const layerZones = [
  {
    target: src(...FOUNDATION),
    from: src(...STORE, ...ACCESS, ...INTERFACES, ...TOP, ...BROWSER),
    message:
      'config/, http/, db/ and ops/ are the foundation: they import nothing above them (limits, access, the interfaces, the programs).',
  },
  {
    target: src(...STORE),
    from: src(...ACCESS, ...INTERFACES, ...TOP, ...BROWSER),
    message: 'limits/ is the store layer: it imports only config, http, db, ops.',
  },
  {
    target: src(...ACCESS),
    from: src(...INTERFACES, ...TOP, ...BROWSER),
    message:
      'access/ is below the interfaces (the backend, the admin API and the CLI call its service layer): it imports limits and the foundation only.',
  },
  ...INTERFACES.map(interfaceZone),
  standaloneZone('verifier', 'is the package a service installs'),
  standaloneZone('console', 'is browser code'),
];

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
      // The layers (CONTRIBUTING.md, Layers): an import goes down a box, never up nor across.
      'import-x/no-restricted-paths': ['error', { basePath: root, zones: layerZones }],
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
