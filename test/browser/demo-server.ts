/**
 * `npm start` for the demo specs: `node scripts/start.mjs` in its own process (as `npm start`
 * runs it, minus the build, which the suite has done), on its own port and AGENTMSG_HOME, and
 * Chromium trusting the relay's certificate the way relay-page.ts does (`launchTrusting`, never
 * ignoreHTTPSErrors), so the page is a secure context.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import path from 'node:path'
import type { Browser, Page } from '@playwright/test'
import { repoRoot } from './harness.js'
import { launchTrusting } from './relay-page.js'

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port
      s.close(() => resolve(p))
    })
  })
}

export interface DemoServer {
  child: ChildProcessWithoutNullStreams
  /** Everything it printed so far, stdout and stderr. */
  output(): string
  pageUrl: string
  relayUrl: string
  echoId: string
  /** SIGTERM, as Ctrl-C: the relay closes its streams and its store. */
  stop(): Promise<void>
}

/** Start the demo on `port` with `home`; resolves once it printed the page's URL. */
export async function startDemoServer(port: number, home: string): Promise<DemoServer> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'scripts/start.mjs')], {
    cwd: repoRoot,
    env: { ...process.env, PORT: String(port), AGENTMSG_HOME: home, AGENTMSG_SKIP_BUILD: '1' },
  })
  let output = ''
  // The page's URL and the file to trust are the last lines start.mjs prints, once all is up.
  await new Promise<void>((resolve, reject) => {
    const seen = (d: Buffer) => {
      output += d
      if (/trust once\s+\S+\n/.test(output)) resolve()
    }
    child.stdout.on('data', seen)
    child.stderr.on('data', seen)
    child.once('exit', (code) => reject(new Error(`start.mjs exited (${code}):\n${output}`)))
  })
  const pageUrl = /open\s+(https:\S+)/.exec(output)![1]!
  return {
    child,
    output: () => output,
    pageUrl,
    relayUrl: new URL(pageUrl).origin,
    echoId: /Echo answers every message: (did:key:\S+)/.exec(output)?.[1] ?? '',
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    },
  }
}

/** Chromium trusting the demo relay's certificate, and a page allowed to reach it. */
export async function openDemoBrowser(
  home: string,
  relayUrl: string,
): Promise<{ browser: Browser; page: Page }> {
  // The relay's leaf certificate, as start.mjs made it (issued by the dev CA in `home`).
  const leaf = await readFile(path.join(home, 'relay', 'dev-tls', 'cert.pem'), 'utf8')
  const browser = await launchTrusting(leaf)
  const context = await browser.newContext()
  await context.grantPermissions(['local-network-access'], { origin: relayUrl })
  return { browser, page: await context.newPage() }
}
