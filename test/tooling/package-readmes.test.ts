/**
 * A package's README is its page on npmjs.com, where only the package's published files exist: a
 * relative link that leaves them (`../../README.md`, `../core/README.md`, a `docs/` file of the
 * repository) is dead there. Such links are absolute (https://github.com/agentmsg/agentmsg/blob/
 * main/…), and an absolute link into this repository must name a file that exists in it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import MarkdownIt, { type Token } from 'markdown-it'
import { describe, expect, it } from 'vitest'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const REPO_URL = /^https:\/\/github\.com\/agentmsg\/agentmsg\/(?:blob|tree)\/main\/([^#?]*)/
/** What `npm pack` always puts in a tarball, whatever `files` says. */
const ALWAYS_PUBLISHED = ['package.json', 'README.md', 'LICENSE']

const markdown = new MarkdownIt({ html: true })

/** Every link and image target of a Markdown text: inline, reference-style, and HTML. */
function linkTargets(text: string): string[] {
  const targets: string[] = []
  const fromHtml = (html: string) => {
    for (const m of html.matchAll(/\b(?:href|src)\s*=\s*["']([^"']+)["']/gi))
      targets.push(m[1] ?? '')
  }
  const walk = (tokens: Token[]) => {
    for (const t of tokens) {
      if (t.type === 'link_open') targets.push(t.attrGet('href') ?? '')
      else if (t.type === 'image') targets.push(t.attrGet('src') ?? '')
      else if (t.type === 'html_inline' || t.type === 'html_block') fromHtml(t.content)
      if (t.children) walk(t.children)
    }
  }
  walk(markdown.parse(text, {}))
  return targets
}

/**
 * The links of a package README that do not work on npm: relative ones to a file outside the
 * package's published files (or to none), and absolute ones into this repository that name no
 * file of it.
 */
function brokenLinks(text: string, pkgDir: string, files: string[]): string[] {
  const published = [...files, ...ALWAYS_PUBLISHED].map((f) => path.join(pkgDir, f))
  return linkTargets(text).filter((target) => {
    if (target.startsWith('#')) return false
    const inRepo = REPO_URL.exec(target)
    if (inRepo) return !existsSync(path.join(root, decodeURIComponent(inRepo[1] ?? '')))
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return false
    const file = path.resolve(pkgDir, decodeURIComponent(target.replace(/[#?].*$/s, '')))
    const inside = published.some((p) => file === p || file.startsWith(`${p}${path.sep}`))
    return !inside || !existsSync(file)
  })
}

const packages = readdirSync(path.join(root, 'packages'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(path.join(root, 'packages', d.name, 'README.md')))
  .map((d) => path.join(root, 'packages', d.name))

describe('package READMEs link only to what npm users can open', () => {
  it.each(packages.map((dir) => [path.relative(root, dir), dir]))('%s', (_name, dir) => {
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))
    const text = readFileSync(path.join(dir, 'README.md'), 'utf8')
    expect(brokenLinks(text, dir, pkg.files ?? [])).toEqual([])
  })

  it('finds the links that leave the package, and lets the ones inside it be', () => {
    const dir = path.join(root, 'packages', 'relay')
    const text = [
      'See [the root](../../README.md#install), [core](../core/README.md),',
      '[the guide](DEPLOYMENT.md) and [a dir](../client).',
      '',
      '[ref]: docs/guide.md',
      '',
      'Uses [ref] and <a href="../cli/README.md">the CLI</a>. ![logo](../../logo.png)',
      'Fine: [here](#operating-a-relay), [a source](src/index.ts), [readme](./README.md#api),',
      `[repo](https://github.com/agentmsg/agentmsg/blob/main/packages/relay/DEPLOYMENT.md), [npm](https://www.npmjs.com/).`,
      'Dead: [typo](https://github.com/agentmsg/agentmsg/blob/main/packages/relay/DEPLOY.md).',
      'Not links: `[code](../x.md)` and',
      '',
      '```md',
      '[fenced](../y.md)',
      '```',
    ].join('\n')
    expect(brokenLinks(text, dir, ['src', 'README.md', 'LICENSE'])).toEqual([
      '../../README.md#install',
      '../core/README.md',
      'DEPLOYMENT.md',
      '../client',
      'docs/guide.md',
      '../cli/README.md',
      '../../logo.png',
      'https://github.com/agentmsg/agentmsg/blob/main/packages/relay/DEPLOY.md',
    ])
  })
})
