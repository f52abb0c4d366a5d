/**
 * The code blocks of every README, found the same way by the Node test (readme.test.ts) and the
 * browser spec (test/browser/readme-quickstart.spec.ts), so a block added to any README is run
 * by one of them: a README cannot hold an example nobody executes.
 *
 * Every ```ts / ```js block of README.md and packages/*\/README.md is one {@link ReadmeBlock}
 * (shell blocks, the CLI's, are checked by readme.test.ts and the CLI's own tests). A block
 * that imports `@agentmsg/storage-indexeddb` runs in a browser (IndexedDB); a block whose first
 * line is a comment naming another runtime (`// deno …`, `// bun …`, `// workerd …`) is a file
 * of test/runtimes/examples, run there by the runtime matrix (test/runtimes/examples.mjs checks
 * that the block equals it); every other block runs on Node.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/**
 * What a program must print (lines of its stdout, others may come between), by
 * `<readme>#<index of its first block>`: what the examples' comments promise. readme.test.ts holds
 * the programs to it, and so does test/tooling/pack-install.test.ts, for the root README's
 * quick starts run from installed tarballs.
 */
export const PRINTS: Record<string, string[]> = {
  'README.md#0': ['3 false true hello', 'got it'],
  'README.md#2': ['3'],
  'README.md#3': ['3 {"parts":[{"type":"text","text":"note to self"}]}'],
  'README.md#4': ['3 hello', 'true'],
  'README.md#5': ['true true the meeting is at 10', 'sealed false'],
  'README.md#9': [
    'agentmsg.deliver agentmsg.receive agentmsg.relay.publish agentmsg.send',
    'accepted',
  ],
  'packages/core/README.md#0': ['3 did-key', '1048576 300000'],
  'packages/a2a/README.md#0': ['hello caller at level 3', 'TASK_STATE_COMPLETED'],
  'packages/client/README.md#0': ['true 3 false hello', 'direct relay got: hello'],
  'packages/client/README.md#2': ['lunch at noon / cake for cat', 'lunch at noon / (not for me)'],
  'packages/transport-https/README.md#0': [
    'true',
    '3 false {"parts":[{"text":"hi bob","type":"text"}]}',
    '202 202 202 202',
    '3 {"parts":[{"text":"via express","type":"text"}]}',
    '3 {"parts":[{"text":"via fastify","type":"text"}]}',
    '3 {"parts":[{"text":"via hono","type":"text"}]}',
    '3 {"parts":[{"text":"via next","type":"text"}]}',
  ],
  'packages/transport-relay/README.md#0': ['true', 'true'],
  'packages/relay/README.md#0': ['true', '401 true'],
}

/** Languages whose blocks are executed; other fences (sh, text, diagrams) are not. */
const CODE = new Set(['ts', 'typescript', 'js', 'javascript', 'mjs'])

export interface ReadmeBlock {
  /** The README, relative to the repository root (`packages/core/README.md`). */
  readme: string
  /** 0-based position among the README's executed blocks. */
  index: number
  /** The `## ` section the block is in ('' before the first one). */
  section: string
  code: string
  runtime: 'node' | 'browser' | OtherRuntime
}

/** Runtimes whose README blocks the runtime matrix runs (test/runtimes). */
type OtherRuntime = 'deno' | 'bun' | 'workerd'

/** Where a block runs: see the file comment. */
function runtimeOf(code: string): ReadmeBlock['runtime'] {
  const other = /^\/\/ (deno|bun|workerd)\b/.exec(code)?.[1] as OtherRuntime | undefined
  if (other) return other
  return code.includes("from '@agentmsg/storage-indexeddb'") ? 'browser' : 'node'
}

/** Every README of the repository, relative to its root, the root one first. */
export function readmes(): string[] {
  const packages = readdirSync(path.join(repoRoot, 'packages'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => `packages/${d.name}/README.md`)
    .filter((file) => existsSync(path.join(repoRoot, file)))
    .sort()
  return ['README.md', ...packages]
}

/** The README files whose blocks run here: every one. */
export function testedReadmes(): string[] {
  return readmes()
}

/** The fenced blocks of one README, with their language. */
export function fences(readme: string): Array<{ lang: string; code: string; section: string }> {
  const text = readFileSync(path.join(repoRoot, readme), 'utf8')
  const out: Array<{ lang: string; code: string; section: string }> = []
  let section = ''
  let open: { lang: string; lines: string[] } | undefined
  for (const line of text.split('\n')) {
    if (open) {
      if (/^```\s*$/.test(line)) {
        out.push({ lang: open.lang, code: `${open.lines.join('\n')}\n`, section })
        open = undefined
      } else open.lines.push(line)
      continue
    }
    const fence = /^```(\S*)/.exec(line)
    if (fence) open = { lang: fence[1] ?? '', lines: [] }
    else if (line.startsWith('## ')) section = line.slice(3).trim()
  }
  if (open) throw new Error(`${readme}: a code fence is never closed`)
  return out
}

/** The executed blocks of one README. */
export function readmeBlocks(readme: string): ReadmeBlock[] {
  return fences(readme)
    .filter((f) => CODE.has(f.lang))
    .map((f, index) => ({
      readme,
      index,
      section: f.section,
      code: f.code,
      runtime: runtimeOf(f.code),
    }))
}

/** Every executed block of every tested README. */
export function allBlocks(): ReadmeBlock[] {
  return testedReadmes().flatMap(readmeBlocks)
}
