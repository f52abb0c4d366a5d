/**
 * The repository stands alone: no tracked file reaches outside it into a sibling checkout (the
 * protocol texts and vectors once lived in one; the vectors are now copied into test/vectors,
 * and docs/protocol.md names the upstream texts by title), and every relative link of its
 * Markdown pages leads to a file the repository holds — with the heading, when the link names
 * one in a Markdown page.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { repoRoot } from '../docs/readme-blocks.js'

/** Tracked files, and new ones git does not ignore (so a check fails before the commit). */
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: repoRoot,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => f !== '')
// A file deleted in the work tree but still in the index is not there to check.
const present = files.filter((f) => existsSync(path.join(repoRoot, f)))
/** Every file and every directory above one. */
const held = new Set(
  present.flatMap((f) => f.split('/').map((_, i, p) => p.slice(0, i + 1).join('/'))),
)

// Built, so that this file does not name it.
const SIBLING = ['..', 'shared'].join('/')
/** Where the copied vectors came from may be told (their provenance). */
const MAY_NAME_SIBLING = new Set(['test/vectors/README.md'])

/** Markdown text without fenced blocks and inline code, where link syntax is not a link. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '').replace(/`[^`\n]*`/g, '')
}

/** The targets of a page's inline links `[…](target)` and reference definitions `[…]: target`. */
function linkTargets(text: string): string[] {
  const body = prose(text)
  const inline = [...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!)
  const defined = [...body.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!)
  return [...inline, ...defined]
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The anchors of a Markdown page's headings (a repeated one gets `-1`, `-2`, …). */
function anchors(text: string): Set<string> {
  const out = new Set<string>()
  const seen = new Map<string, number>()
  for (const [, heading] of prose(text).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(heading!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

const pages = present.filter((f) => f.endsWith('.md'))
const read = (file: string) => readFileSync(path.join(repoRoot, file), 'utf8')

/** Why `target`, linked from `page`, does not resolve; undefined when it does. */
function brokenLink(page: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined // https:, mailto:, …
  const [pathPart = '', anchor] = target.split('#', 2)
  const file =
    pathPart === ''
      ? page
      : path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURI(pathPart)))
  const normal = file.replace(/\/$/, '')
  if (normal.startsWith('..') || !held.has(normal))
    return `${target}: no such file in the repository`
  if (anchor === undefined || anchor === '' || !normal.endsWith('.md')) return undefined
  return anchors(read(normal)).has(anchor)
    ? undefined
    : `${target}: no heading #${anchor} in ${normal}`
}

describe('the repository stands alone', () => {
  it('lists the files it checks', () => {
    expect(present).toContain('README.md')
    expect(present).toContain('docs/protocol.md')
    expect(present).toContain('test/tooling/standalone.test.ts')
    expect(pages).toEqual(
      expect.arrayContaining([
        'README.md',
        'SECURITY.md',
        'docs/protocol.md',
        'packages/core/README.md',
      ]),
    )
  })

  it(`no file refers to ${SIBLING}`, () => {
    const offenders = present.filter((f) => {
      if (MAY_NAME_SIBLING.has(f)) return false
      const bytes = readFileSync(path.join(repoRoot, f))
      return !bytes.includes(0) && bytes.toString('utf8').includes(SIBLING)
    })
    expect(offenders).toEqual([])
  })

  it('every relative link of every Markdown page resolves, with its heading', () => {
    const targets = pages.flatMap((page) =>
      linkTargets(read(page)).map((target) => ({ page, target })),
    )
    // The pages link to each other and to sources: a scan that found none would check nothing.
    expect(targets.filter((t) => !/^[a-z]+:/i.test(t.target)).length).toBeGreaterThan(20)
    const broken = targets.flatMap(({ page, target }) => {
      const why = brokenLink(page, target)
      return why === undefined ? [] : [`${page}: ${why}`]
    })
    expect(broken).toEqual([])
  })

  it('the checks can fail: a sibling path, a missing file and a missing heading are caught', () => {
    expect(brokenLink('README.md', `${SIBLING}/spec/SPEC.md`)).toMatch(/no such file/)
    expect(brokenLink('docs/protocol.md', 'nowhere.md')).toMatch(/no such file/)
    expect(brokenLink('docs/protocol.md', '../README.md#no-such-heading')).toMatch(/no heading/)
    expect(brokenLink('docs/protocol.md', '../README.md#sealed-bodies-what-a-relay-sees')).toBe(
      undefined,
    )
    expect(brokenLink('README.md', '#runtimes')).toBe(undefined)
    expect(linkTargets('[a](x.md) `[b](y.md)`\n```md\n[c](z.md)\n```\n[d]: w.md "t"\n')).toEqual([
      'x.md',
      'w.md',
    ])
    expect(slug('10.1 Endpoints')).toBe('101-endpoints')
    expect(slug('Quick start (agent)')).toBe('quick-start-agent')
  })
})
