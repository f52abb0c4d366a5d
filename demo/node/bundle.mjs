/**
 * The demo page's script: demo/page/app.ts bundled with esbuild for the browser, in memory, at
 * every start (well under a second), against the BUILT packages: resolved through package.json
 * conditions alone (`browser`, never `@agentmsg/source`), as an application's bundler does, so
 * the page runs what `npm run build` produced (test/browser/harness.ts bundles the same way).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The bundled page script: one ES module, minified, no source map. */
export async function bundlePage() {
  const result = await build({
    entryPoints: [path.join(root, 'demo', 'page', 'app.ts')],
    absWorkingDir: root,
    bundle: true,
    platform: 'browser',
    format: 'esm',
    conditions: ['browser'],
    target: 'es2022',
    minify: true,
    // Never read tsconfig.json (whose customConditions would pick package sources).
    tsconfigRaw: {},
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  const fromSrc = Object.keys(result.metafile.inputs).filter((p) =>
    /^packages\/[^/]+\/src\//.test(p),
  )
  if (fromSrc.length > 0) {
    throw new Error(`the demo page bundled package sources instead of dist/: ${fromSrc.join(', ')}`)
  }
  const out = result.outputFiles[0]
  if (!out) throw new Error('esbuild produced no demo bundle')
  return out.text
}
