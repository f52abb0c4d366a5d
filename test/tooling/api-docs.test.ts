/**
 * `npm run docs` (TypeDoc with typedoc.json) documents every public entry of every published
 * package and fails on an exported declaration without a doc comment. It runs here on the
 * repository, and on a fixture workspace (fixtures/undocumented-export: one package with an
 * undocumented export and an undocumented interface member) given the very same typedoc.json
 * and entry-point plugin.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { stripVTControlCharacters } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const TYPEDOC = path.join(root, 'node_modules', 'typedoc', 'bin', 'typedoc')
const PLUGIN = 'scripts/typedoc-entry-points.mjs'

mkdirSync(path.join(root, '.tmp'), { recursive: true })
const scratch = mkdtempSync(path.join(root, '.tmp', 'api-docs-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** TypeDoc as `npm run docs` runs it (typedoc.json of `cwd`), its output in `out`. */
function typedoc(cwd: string, out: string) {
  const run = spawnSync(process.execPath, [TYPEDOC, '--out', out], { cwd, encoding: 'utf8' })
  // Without colours, so the output can be matched.
  return { status: run.status, output: stripVTControlCharacters(`${run.stdout}${run.stderr}`) }
}

describe('npm run docs', () => {
  it('builds the API reference of the repository, every public entry named by its import path', () => {
    const out = path.join(scratch, 'repository')
    const { status, output } = typedoc(root, out)
    expect(output).not.toMatch(/\[warning\]|\[error\]/)
    expect(status).toBe(0)
    const index = readFileSync(path.join(out, 'index.html'), 'utf8')
    for (const entry of [
      '@agentmsg/core/receive',
      '@agentmsg/relay/postgres',
      '@agentmsg/client/node',
    ]) {
      expect(index).toContain(entry)
    }
  }, 300_000)

  it('fails naming an exported declaration that has no doc comment', () => {
    const fixture = path.join(scratch, 'fixture')
    cpSync(path.join(root, 'test', 'tooling', 'fixtures', 'undocumented-export'), fixture, {
      recursive: true,
    })
    cpSync(path.join(root, 'typedoc.json'), path.join(fixture, 'typedoc.json'))
    cpSync(path.join(root, PLUGIN), path.join(fixture, PLUGIN))
    const out = path.join(fixture, 'docs-out')
    const { status, output } = typedoc(fixture, out)
    const named = output.matchAll(/(\S+) \(\w+\), defined in .* does not have any documentation/g)
    // The undocumented export and interface member; not the documented ones, nor the members of
    // an inline object type, which its owner's comment covers.
    expect([...named].map((m) => m[1]).sort()).toEqual([
      'AddOptions.precision',
      'undocumentedHelper',
    ])
    expect(status).not.toBe(0)
    expect(existsSync(path.join(out, 'index.html'))).toBe(false)
  }, 120_000)
})
