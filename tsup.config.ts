import { defineConfig, type Options } from 'tsup'

/**
 * One tsup run builds every package. Each package is ESM-only, platform-neutral, with
 * declarations; `#…` subpath imports stay external so the consumer's resolver picks the
 * platform file through the package's `imports` conditions.
 */
function pkg(name: string, entry: Record<string, string>, extra: Options = {}): Options {
  return {
    name,
    entry: Object.fromEntries(
      Object.entries(entry).map(([k, v]) => [k, `packages/${name}/${v}`]),
    ),
    outDir: `packages/${name}/dist`,
    format: ['esm'],
    platform: 'neutral',
    target: 'es2022',
    dts: true,
    splitting: true,
    sourcemap: false,
    clean: true,
    treeshake: true,
    external: [/^#/, /^node:/],
    tsconfig: 'tsconfig.base.json',
    ...extra,
  }
}

export default defineConfig([
  pkg('core', {
    index: 'src/index.ts',
    'crypto/default.node': 'src/crypto/default.node.ts',
    'crypto/default.browser': 'src/crypto/default.browser.ts',
    'crypto/default.portable': 'src/crypto/default.portable.ts',
  }),
])
