// `npm run lint` (issue 17, item 6): a small, type-aware rule set for what `tsc --noEmit` does not
// catch, promises nobody awaits and code nobody uses, plus three one-line correctness rules. Nothing
// stylistic: layout is left to the author. Each rule says why it is here.
// The type-aware rules read the project's tsconfig.json (src, test, bench, native-bench, scripts)
// through typescript-eslint's project service.
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // Build output (bench/.build is the bench's compiled copy of src/), measurements, scratch files.
  globalIgnores(['node_modules/', 'dist/', 'bench/.build/', 'bench/results/', '.tmp/', '.cache/', 'test/kube/build/']),
  {
    files: ['{src,test,bench,native-bench,scripts}/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: {
      // An eslint-disable comment must silence a finding of a rule below; a stale one is an error.
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      // A promise neither awaited, returned, .catch()ed nor marked `void` loses its rejection
      // (an unhandledRejection ends the daemon) and its ordering; `void p` says "fire and forget".
      // node:test's test() and describe() return a promise the runner itself tracks: registering a
      // test is not fire-and-forget (a subtest's t.test() is not listed, so it must be awaited).
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      // An async function passed where a void callback is expected (an 'data'/'request' listener,
      // setTimeout, forEach) is a floating promise the caller cannot see; and a promise in an `if`
      // is always truthy.
      '@typescript-eslint/no-misused-promises': 'error',
      // Unused code. tsconfig's noUnusedLocals covers locals and imports but not parameters or
      // caught errors; `_`-prefixed names say "unused on purpose" (a callback's fixed signature).
      // A rest sibling (`const { a, ...rest } = o`) is how an object is copied without `a`.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // A private field or method (`#x` or TypeScript's `private`) that is written but never read.
      '@typescript-eslint/no-unused-private-class-members': 'error',
      // Code after return/throw/break: tsc only suggests it (allowUnreachableCode is unset).
      'no-unreachable': 'error',
      // A `let` never reassigned reads as if it were; `const` says it is not. Not when a closure
      // declared earlier reads it (src/sim/watch.ts's stop() and its timer): there `const` would put
      // that read in the temporal dead zone, a ReferenceError if it runs before the assignment.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `var` is function-scoped and hoisted; nothing here needs that.
      'no-var': 'error',
      // `==` coerces ('' == 0); 'smart' still allows `x == null` (null or undefined) and typeof checks.
      eqeqeq: ['error', 'smart'],
    },
  },
);
