import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, vi } from 'vitest'

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

/** The ```ts blocks of one `## ` section of the root README. */
function sectionBlocks(title: string): string[] {
  const start = readme.indexOf(`\n## ${title}\n`)
  if (start < 0) throw new Error(`README has no section "${title}"`)
  const end = readme.indexOf('\n## ', start + 1)
  const section = readme.slice(start, end < 0 ? undefined : end)
  return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? '')
}

/** Write `code` inside the repository (so packages resolve through their exports) and import it. */
async function run(code: string): Promise<void> {
  const scratch = fileURLToPath(new URL('../../.tmp/', import.meta.url))
  mkdirSync(scratch, { recursive: true })
  const file = path.join(mkdtempSync(path.join(scratch, 'readme-')), 'example.ts')
  writeFileSync(file, `${code}\nexport const done = true\n`)
  const mod = (await import(/* @vite-ignore */ file)) as { done?: boolean }
  expect(mod.done).toBe(true)
}

describe('README.md', () => {
  it('"Write your own transport" runs as written: two agents talk over the custom transport', async () => {
    const blocks = sectionBlocks('Write your own transport')
    expect(blocks).toHaveLength(1)
    const logged: unknown[][] = []
    const log = vi.spyOn(console, 'log').mockImplementation((...args) => void logged.push(args))
    try {
      await run(blocks[0] ?? '')
    } finally {
      log.mockRestore()
    }
    // What the comments in the example promise: level 3 'hello', and the reply in the same conversation.
    expect(logged).toContainEqual([3, 'hello'])
    expect(logged).toContainEqual([true])
  })

  it('"Sealed bodies" runs as written: the relay is handed a sealed part, bob reads the text', async () => {
    const blocks = sectionBlocks('Sealed bodies: what a relay sees')
    expect(blocks).toHaveLength(1)
    const logged: unknown[][] = []
    const log = vi.spyOn(console, 'log').mockImplementation((...args) => void logged.push(args))
    try {
      await run(blocks[0] ?? '')
    } finally {
      log.mockRestore()
    }
    expect(logged).toEqual([
      [true, 'true the meeting is at 10'],
      ['sealed', false],
    ])
  })

  it('draws the package graph with every workspace package', () => {
    const arch = readme.slice(readme.indexOf('\n## Architecture\n'))
    for (const name of [
      'cli',
      'client',
      'relay',
      'transport-https',
      'transport-relay',
      'core',
      'storage-fs',
      'storage-indexeddb',
    ]) {
      expect(arch).toContain(name)
    }
  })
})
