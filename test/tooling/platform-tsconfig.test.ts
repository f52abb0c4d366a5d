/**
 * `npm run typecheck` checks browser-safe code under tsconfig.browser.json: DOM types, no
 * `@types/node`, the `browser` branch of every `#…` import. This proves the config bites: a file
 * under a browser package's src/ that uses `Buffer`, `process` or a `node:` module fails there,
 * while the same file passes under the Node config (tsconfig.json), so the failure is the
 * platform's and not the file's. The probe imports every browser-facing export entry, so a
 * dependency whose types pull in `@types/node` (and with it a global `Buffer`) fails here too.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PROBE = path.join(ROOT, 'packages/core/src/__platform-probe__.ts')

function parse(config: string): ts.ParsedCommandLine {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, config), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    },
  })
  if (!parsed) throw new Error(`cannot read ${config}`)
  return parsed
}

const programs = new Map<string, ts.Program>()

/** Diagnostics of a virtual file at PROBE, compiled with `config`'s options. */
function probe(config: string, text: string): string[] {
  const { options } = parse(config)
  const host = ts.createCompilerHost(options)
  const getSourceFile = host.getSourceFile.bind(host)
  host.getSourceFile = (name, language, ...rest) =>
    path.resolve(name) === PROBE
      ? ts.createSourceFile(name, text, language)
      : getSourceFile(name, language, ...rest)
  host.fileExists = (name) => path.resolve(name) === PROBE || ts.sys.fileExists(name)
  host.readFile = (name) => (path.resolve(name) === PROBE ? text : ts.sys.readFile(name))
  // Reusing the previous program of the same config skips re-parsing every unchanged file.
  const oldProgram = programs.get(config)
  const program = ts.createProgram({ rootNames: [PROBE], options, host, oldProgram })
  programs.set(config, program)
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(PROBE))
    .map((d) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`)
}

type Target = string | null | { [condition: string]: Target }

/** `@agentmsg/x[/sub]` for every export entry with a `default` or `browser` condition. */
function browserEntries(): string[] {
  const reaches = (t: Target): boolean =>
    t !== null &&
    typeof t === 'object' &&
    Object.entries(t).some(([c, v]) => c === 'default' || c === 'browser' || reaches(v))
  return readdirSync(path.join(ROOT, 'packages')).flatMap((dir) => {
    let manifest: { name: string; private?: boolean; exports?: Record<string, Target> }
    try {
      manifest = JSON.parse(readFileSync(path.join(ROOT, 'packages', dir, 'package.json'), 'utf8'))
    } catch {
      return []
    }
    if (manifest.private) return []
    return Object.entries(manifest.exports ?? {})
      .filter(([key, target]) => key !== './package.json' && reaches(target))
      .map(([key]) => manifest.name + key.slice(1))
  })
}

const entries = browserEntries()
const imports = entries.map((e, i) => `import * as entry${i} from '${e}'`).join('\n')
const uses = `export const entries = [${entries.map((_, i) => `entry${i}`).join(', ')}]`

describe('one tsconfig per platform', () => {
  it('finds the browser-facing entries', () => {
    expect(entries).toEqual(
      expect.arrayContaining(['@agentmsg/core', '@agentmsg/client', '@agentmsg/transport-relay']),
    )
    expect(entries).not.toContain('@agentmsg/client/node')
  })

  it('the browser entries type-check without Node types', () => {
    expect(probe('tsconfig.browser.json', `${imports}\n${uses}\n`)).toEqual([])
  })

  it.each([
    ['Buffer', `export const b = Buffer.from('x')`, /TS25(80|91).*'Buffer'/],
    ['process', `export const e = process.env.HOME`, /TS25(80|91).*'process'/],
    ['a node: import', `export { readFileSync } from 'node:fs'`, /TS2307.*'node:fs'/],
  ])('%s in browser code fails the browser check and passes the Node one', (_, code, error) => {
    const text = `${imports}\n${uses}\n${code}\n`
    const browser = probe('tsconfig.browser.json', text)
    expect(browser).toHaveLength(1)
    expect(browser[0]).toMatch(error)
    expect(probe('tsconfig.json', text)).toEqual([])
  })

  it('covers the browser packages and leaves their Node-only files to the Node check', () => {
    const files = new Set(
      parse('tsconfig.browser.json').fileNames.map((f) => path.relative(ROOT, f)),
    )
    for (const f of [
      'packages/core/src/index.ts',
      'packages/core/src/crypto/default.browser.ts',
      'packages/transport-relay/src/ws-web.ts',
      'packages/storage-indexeddb/src/index.ts',
      'packages/client/src/index.ts',
      'packages/transport-https/src/index.ts',
    ]) {
      expect(files, f).toContain(f)
    }
    for (const f of [
      'packages/core/src/crypto/node.ts',
      'packages/core/src/crypto/default.node.ts',
      'packages/transport-relay/src/ws-node.ts',
      'packages/client/src/node.ts',
      'packages/transport-https/src/node.ts',
      'packages/transport-https/src/dev-cert.ts',
    ]) {
      expect(files, f).not.toContain(f)
    }
  })
})
