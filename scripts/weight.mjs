#!/usr/bin/env node
/**
 * The weight of the packages, as the consolidation measured it: source lines under
 * packages/*\/src (what git tracks), files over 300 lines, and the names each package exports
 * (values and types, distinct across its entries, read by the TypeScript checker from the
 * `@agentmsg/source` files its `exports` name). `--check` fails past the limits below; the
 * tooling test runs it, so the code cannot quietly grow back.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
// Lines: 24,000 after the consolidation (from 34,154); 24,600 with the per-address relay
// bounds, ack checks, webhook limit and the CLI's one file reader. Code lines (neither blank nor
// comment) are the weight proper: 24,704 before the consolidation, 19,277 after the hardening.
// The API reference requires a doc comment on every export and member, so `lines` grew by those
// (~ +300) and by the framework route handlers and optional tracing (~ +200): 24,915 lines,
// 19,403 code lines. The CLI's MCP server (`agentmsg mcp`: tools, resources, the acked
// mailbox) added ~550 lines, ~450 of code; `@agentmsg/a2a` (A2A's client transport, the server
// adapter, pushes) ~800 lines, ~600 of code, and 11 names; groups (topics in the client, topic
// subscriptions in the relay transport, the inbox's webhook_verify, the CLI's subscribe, publish
// and group) ~800 lines, ~650 of code, 5 names; the relay's push before the commit (pending
// entries merged into feeds, cursors never reused after a lost commit) ~100 lines, ~50 of code;
// X25519 on each platform's own (node:crypto, WebCrypto, noble as the fallback) ~120; the
// PostgreSQL store's per-mailbox locks, striped totals and schema migration ~130; the CLI's
// newcomer fixes (`dev-ca`, one-line failures, certificate stops, terminal or JSON logs) ~400.
// Raise a limit only with a capability that needs it, and say so in the commit.
export const LIMITS = {
  lines: 28_050,
  codeLines: 21_850,
  fileLines: 300,
  names: 276,
  coreRootNames: 60,
  coreEntries: 6,
}

/**
 * Lines of `text` that are neither blank nor comment: a line starting with `//`, `/*` or `*` is a
 * comment line (a code line starting with `*` is rare enough not to matter here).
 */
const countCodeLines = (text) =>
  text.split('\n').filter((line) => !/^\s*($|\/\/|\/\*|\*)/.test(line)).length

export function measure() {
  const files = execFileSync('git', ['ls-files', 'packages/*/src/*.ts'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f !== '' && existsSync(path.join(root, f)))
  let lines = 0
  let codeLines = 0
  const long = []
  for (const f of files) {
    const text = readFileSync(path.join(root, f), 'utf8')
    const n = text.split('\n').length - 1
    lines += n
    codeLines += countCodeLines(text)
    if (n > LIMITS.fileLines) long.push(`${f} (${n})`)
  }
  const entries = []
  for (const dir of readdirSync(path.join(root, 'packages'))) {
    const manifest = path.join(root, 'packages', dir, 'package.json')
    if (!existsSync(manifest)) continue
    const m = JSON.parse(readFileSync(manifest, 'utf8'))
    for (const [key, target] of Object.entries(m.exports ?? {})) {
      const source = typeof target === 'object' ? target['@agentmsg/source'] : undefined
      if (typeof source === 'string')
        entries.push({ pkg: m.name, key, file: path.join(root, 'packages', dir, source) })
    }
  }
  const config = ts.readConfigFile(path.join(root, 'tsconfig.base.json'), ts.sys.readFile)
  const options = ts.parseJsonConfigFileContent(config.config, ts.sys, root).options
  const program = ts.createProgram(
    entries.map((e) => e.file),
    { ...options, noEmit: true },
  )
  const checker = program.getTypeChecker()
  const names = new Map()
  for (const e of entries) {
    const symbol = checker.getSymbolAtLocation(program.getSourceFile(e.file))
    e.names = symbol ? checker.getExportsOfModule(symbol).map((s) => s.name) : []
    const set = names.get(e.pkg) ?? new Set()
    for (const n of e.names) set.add(n)
    names.set(e.pkg, set)
  }
  const perPackage = Object.fromEntries([...names].map(([p, s]) => [p, s.size]))
  const total = Object.values(perPackage).reduce((a, b) => a + b, 0)
  const core = entries.filter((e) => e.pkg === '@agentmsg/core')
  return {
    files: files.length,
    lines,
    codeLines,
    long,
    names: total,
    perPackage,
    coreRootNames: core.find((e) => e.key === '.')?.names.length ?? 0,
    coreEntries: core.length,
  }
}

export function problems(w) {
  const out = []
  if (w.lines > LIMITS.lines)
    out.push(`${w.lines} lines under packages/*/src (limit ${LIMITS.lines})`)
  if (w.codeLines > LIMITS.codeLines)
    out.push(`${w.codeLines} code lines under packages/*/src (limit ${LIMITS.codeLines})`)
  for (const f of w.long) out.push(`${f}: over ${LIMITS.fileLines} lines`)
  if (w.names > LIMITS.names) out.push(`${w.names} exported names (limit ${LIMITS.names})`)
  if (w.coreRootNames > LIMITS.coreRootNames)
    out.push(`core's root exports ${w.coreRootNames} names (limit ${LIMITS.coreRootNames})`)
  if (w.coreEntries > LIMITS.coreEntries)
    out.push(`core has ${w.coreEntries} entries (limit ${LIMITS.coreEntries})`)
  return out
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const w = measure()
  console.log(JSON.stringify(w, null, 2))
  const found = problems(w)
  for (const p of found) console.error(`weight: ${p}`)
  if (process.argv.includes('--check') && found.length > 0) process.exitCode = 1
}
