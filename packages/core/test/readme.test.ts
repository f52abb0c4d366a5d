import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import * as core from '../src/index.js'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

describe('packages/core/README.md', () => {
  it('mentions every export of @agentmsg/core in an example', () => {
    const code = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).join('\n')
    const missing = Object.keys(core).filter((name) => !new RegExp(`\\b${name}\\b`).test(code))
    expect(missing).toEqual([])
  })

  it('runs its examples as one program', async () => {
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])
    expect(blocks.length).toBeGreaterThan(5)
    // Inside the repository (.tmp/ is git-ignored), so `@agentmsg/core` resolves the way it does
    // for a consumer: through node_modules and the package's exports.
    const scratch = fileURLToPath(new URL('../../../.tmp/', import.meta.url))
    mkdirSync(scratch, { recursive: true })
    const dir = mkdtempSync(path.join(scratch, 'readme-'))
    const file = path.join(dir, 'readme-example.ts')
    writeFileSync(file, blocks.join('\n') + '\nexport const done = true\n')
    const mod = await import(/* @vite-ignore */ file)
    expect(mod.done).toBe(true)
  })
})
