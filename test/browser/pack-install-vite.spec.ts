/**
 * The browser quick start as a user builds it: examples/browser-vite (the README block as a Vite
 * app) copied into a new project outside the repository, where `npm install` takes its
 * dependencies (what the root README's install section names for a web app) from the packed
 * tarballs (test/tooling/packed.ts) and Vite from the registry; then `npm run build`
 * (`vite build`).
 * The built page is served from a real relay's origin through the relay's `intercept`, as
 * `npm start` serves its demo, so the app takes `location.origin` as its relay, as the README
 * says. A Node agent sends it "hello" through the relay: the page prints it (level 3, not yet a
 * known contact) and answers "got it".
 */
import { cp, mkdir, readdir, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { createAddressPolicy, createNodeAgent } from '@agentmsg/client/node'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { serveRelay } from '@agentmsg/relay'
import { expect, test } from '@playwright/test'
import { repoRoot } from '../docs/readme-blocks.js'
import {
  NPM_INSTALL,
  npm,
  pack,
  readmeInstalls,
  resolveFrom,
  scratchOutside,
  serveScope,
  withAgentmsgDependencies,
} from '../tooling/packed.js'
import { launchTrusting, openTestPage } from './relay-page.js'

const EXAMPLE = path.join(repoRoot, 'examples/browser-vite')
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

/** Every file under `dir` by URL path (`/index.html` also as `/`), with its content type. */
async function builtFiles(
  dir: string,
): Promise<Map<string, { type: string; body: Uint8Array<ArrayBuffer> }>> {
  const files = new Map<string, { type: string; body: Uint8Array<ArrayBuffer> }>()
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const file = path.join(entry.parentPath, entry.name)
    const type = TYPES[path.extname(file)] ?? 'application/octet-stream'
    files.set(`/${path.relative(dir, file).split(path.sep).join('/')}`, {
      type,
      body: new Uint8Array(await readFile(file)),
    })
  }
  const index = files.get('/index.html')
  if (index) files.set('/', index)
  return files
}

test('the Vite example, built in a new project from the packed packages, answers a Node agent', async () => {
  test.setTimeout(300_000)
  const box = await scratchOutside('agentmsg-pack-vite-')
  try {
    const wanted = readmeInstalls().browser
    const manifest = JSON.parse(await readFile(path.join(EXAMPLE, 'package.json'), 'utf8'))
    // The example asks for what the README tells a web app to install.
    expect(Object.keys(manifest.dependencies).sort()).toEqual([...wanted].sort())

    const packed = await pack(withAgentmsgDependencies(wanted), path.join(box, 'tarballs'))
    const app = path.join(box, 'app')
    await mkdir(app)
    for (const part of ['package.json', 'index.html', 'src'])
      await cp(path.join(EXAMPLE, part), path.join(app, part), { recursive: true })
    expect(await resolveFrom(app, '@agentmsg/client')).toBeUndefined()
    // `npm install` as the example's README says, the @agentmsg scope served from the tarballs.
    const registry = await serveScope(packed)
    await npm([...NPM_INSTALL, registry.flag], app).finally(() => registry.close())
    await npm(['run', 'build'], app)
    const files = await builtFiles(path.join(app, 'dist'))
    expect(files.has('/')).toBe(true)

    const cert = await createDevCertificate()
    const relay = await serveRelay({
      port: 0,
      dataDir: path.join(box, 'relay'),
      tls: cert,
      closeTimeoutMs: 1_000,
      intercept: (request) => {
        const file = request.method === 'GET' && files.get(new URL(request.url).pathname)
        return file
          ? new Response(file.body, { headers: { 'content-type': file.type } })
          : undefined
      },
    })
    const origin = new URL(relay.url).origin
    const browser = await launchTrusting(cert.cert)
    const node = await createNodeAgent({
      relays: [relay.url],
      ca: cert.ca,
      addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    })
    try {
      const problems: string[] = []
      const lines: string[] = []
      const { page } = await openTestPage(browser, origin, (p) => problems.push(p))
      page.on('console', (msg) => void (msg.type() !== 'error' && lines.push(msg.text())))
      page.on('request', (r) => {
        if (!r.url().startsWith(`${origin}/`) && !r.url().startsWith('data:'))
          problems.push(`request to ${r.url()}`)
      })
      const line = async (match: (l: string) => boolean): Promise<string> => {
        await expect
          .poll(() => problems.length > 0 || lines.some(match), { timeout: 30_000 })
          .toBe(true)
        expect(problems).toEqual([])
        return lines.find(match)!
      }
      const replies: string[] = []
      node.on('message', (m) => void replies.push(`${m.level} ${m.text}`))

      await page.goto(`${origin}/`)
      const id = (await line((l) => l.startsWith('listening as '))).slice('listening as '.length)
      expect(id).toMatch(/^did:key:z6Mk/)
      await node.send(id, 'hello', { relays: [relay.url] })
      await line((l) => l === '3 false hello')
      await expect.poll(() => replies, { timeout: 30_000 }).toEqual(['3 got it'])
      await expect(page.locator('#log')).toContainText('3 false hello')
    } finally {
      await node.close()
      await browser.close()
      await relay.close()
    }
  } finally {
    await rm(box, { recursive: true, force: true })
  }
})
