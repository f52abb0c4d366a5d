import { readFileSync } from 'node:fs'
import { defineConfig, type Options } from 'tsup'

/**
 * A package's dependencies stay imports in its dist. tsup only externalizes the dependencies of
 * the package.json in the working directory, which is the private root here, so without this it
 * would inline `@noble/*` and `multiformats` into every package (a second copy for consumers).
 */
function dependencies(name: string): RegExp[] {
  const manifest = JSON.parse(readFileSync(`packages/${name}/package.json`, 'utf8')) as {
    dependencies?: Record<string, string>
    peerDependencies?: Record<string, string>
  }
  return Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).map(
    (dep) => new RegExp(`^${dep.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?:/|$)`),
  )
}

/**
 * One tsup run builds every package. Each package is ESM-only, platform-neutral, with
 * declarations; `#…` subpath imports stay external so the consumer's resolver picks the
 * platform file through the package's `imports` conditions.
 */
function pkg(name: string, entry: Record<string, string>, extra: Options = {}): Options {
  return {
    name,
    entry: Object.fromEntries(Object.entries(entry).map(([k, v]) => [k, `packages/${name}/${v}`])),
    outDir: `packages/${name}/dist`,
    format: ['esm'],
    platform: 'neutral',
    target: 'es2022',
    dts: true,
    splitting: true,
    sourcemap: false,
    clean: true,
    treeshake: true,
    external: [/^#/, /^node:/, ...dependencies(name)],
    tsconfig: 'tsconfig.base.json',
    // Keep `node:` specifiers: tsup strips them by default, and a bare `crypto` is what browser
    // bundlers silently polyfill or stub instead of failing.
    removeNodeProtocol: false,
    ...extra,
  }
}

/**
 * The declaration build type-checks `src`, where a `#…` import resolves through package.json
 * `imports` to `dist/…d.ts` files that `clean` has just removed. Point it at one source variant
 * (every variant has the same shape); the emitted `.d.ts` keeps the `#…` import as written.
 */
function dtsPaths(paths: Record<string, string>): Options['dts'] {
  return {
    compilerOptions: {
      baseUrl: '.',
      paths: Object.fromEntries(Object.entries(paths).map(([k, v]) => [k, [`packages/${v}`]])),
    },
  }
}

const CORE_SOURCE = {
  '@agentmsg/core': 'core/src/index.ts',
  '@agentmsg/core/noble': 'core/src/noble.ts',
  '@agentmsg/core/x25519': 'core/src/x25519-entry.ts',
  '#crypto-default': 'core/src/crypto/default.node.ts',
}

export default defineConfig([
  pkg(
    'core',
    {
      index: 'src/index.ts',
      noble: 'src/noble.ts',
      x25519: 'src/x25519-entry.ts',
      'crypto/default.node': 'src/crypto/default.node.ts',
      'crypto/default.browser': 'src/crypto/default.browser.ts',
      'crypto/default.portable': 'src/crypto/default.portable.ts',
    },
    { dts: dtsPaths({ '#crypto-default': 'core/src/crypto/default.node.ts' }) },
  ),
  // Packages build in parallel: their declaration builds read core from source, not from a
  // dist/ that may not exist yet on a fresh clone (the emitted .d.ts keeps `@agentmsg/core`).
  pkg(
    'transport-https',
    { index: 'src/index.ts', pipeline: 'src/pipeline.ts', node: 'src/node.ts' },
    { dts: dtsPaths(CORE_SOURCE) },
  ),
  pkg(
    'transport-relay',
    { index: 'src/index.ts', 'ws-node': 'src/ws-node.ts', 'ws-web': 'src/ws-web.ts' },
    { dts: dtsPaths({ ...CORE_SOURCE, '#relay-ws': 'transport-relay/src/ws-web.ts' }) },
  ),
  pkg(
    'relay',
    { index: 'src/index.ts' },
    {
      platform: 'node',
      dts: dtsPaths({
        ...CORE_SOURCE,
        '@agentmsg/transport-https': 'transport-https/src/index.ts',
        '@agentmsg/transport-https/node': 'transport-https/src/node.ts',
        '@agentmsg/transport-https/pipeline': 'transport-https/src/pipeline.ts',
        '@agentmsg/transport-relay': 'transport-relay/src/index.ts',
        '#relay-ws': 'transport-relay/src/ws-node.ts',
      }),
    },
  ),
  pkg('storage-fs', { index: 'src/index.ts' }, { platform: 'node', dts: dtsPaths(CORE_SOURCE) }),
  pkg('storage-indexeddb', { index: 'src/index.ts' }, { dts: dtsPaths(CORE_SOURCE) }),
  pkg(
    'client',
    { index: 'src/index.ts', node: 'src/node.ts' },
    {
      dts: dtsPaths({
        ...CORE_SOURCE,
        '@agentmsg/transport-https': 'transport-https/src/index.ts',
        '@agentmsg/transport-https/node': 'transport-https/src/node.ts',
        '@agentmsg/transport-https/pipeline': 'transport-https/src/pipeline.ts',
        '@agentmsg/transport-relay': 'transport-relay/src/index.ts',
        '#relay-ws': 'transport-relay/src/ws-web.ts',
        '@agentmsg/storage-fs': 'storage-fs/src/index.ts',
        '@agentmsg/storage-indexeddb': 'storage-indexeddb/src/index.ts',
      }),
    },
  ),
  pkg('cli', { cli: 'src/cli.ts' }, { platform: 'node', dts: false }),
])
