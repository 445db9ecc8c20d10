// Type-aware lint: the rules that matter most in a daemon (floating promises,
// misused promises, unsafe any) need type information, so every TS file is
// linted against tsconfig.json.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  // Generated code (npm run generate) is checked by regenerating it, not by lint.
  { ignores: ["dist/**", "node_modules/**", ".winfleet/**", "**/*.mjs", "bin/**", "agent/broker/generated/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's describe/it return promises the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            {
              from: "package",
              package: "node:test",
              name: ["describe", "it", "test", "before", "after", "beforeEach", "afterEach"],
            },
          ],
        },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/return-await": ["error", "in-try-catch"],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      // Prettier wraps code at 120 columns but leaves comments and long strings alone: this holds the
      // comments to the same width. Strings, templates and URLs may run on (a message is greppable whole).
      "max-len": [
        "error",
        {
          code: 120,
          tabWidth: 2,
          ignoreUrls: true,
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreRegExpLiterals: true,
          ignorePattern: "eslint-disable",
        },
      ],
      "no-restricted-syntax": [
        "error",
        { selector: "TSEnumDeclaration", message: "Use an `as const` object and a derived union." },
        {
          selector: "CallExpression[callee.object.name=/^(it|test|describe)$/][callee.property.name='only']",
          message: ".only would skip the rest of the suite.",
        },
      ],
    },
  },
);
