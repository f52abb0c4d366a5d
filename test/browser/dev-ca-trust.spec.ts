/**
 * `agentmsg dev-ca trust --run --only nss` makes Chromium trust a `--dev-tls` server: the CA goes
 * into the NSS database of a fresh HOME (certutil, Debian's libnss3-tools), and Chromium started
 * with that HOME opens the relay's health page over https; with a HOME that never imported it,
 * the same page fails with a certificate error. The browser is launched here, not from the
 * config, with nothing that relaxes certificate checks (no ignoreHTTPSErrors, no
 * --ignore-certificate-errors).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { chromium, expect, test } from '@playwright/test'

const CLI = path.resolve('packages/cli/dist/cli.js')
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run']

let relay: ChildProcess
let url: string
const homes: string[] = []
const newHome = () => {
  const home = mkdtempSync(path.join(tmpdir(), 'agentmsg-nss-home-'))
  homes.push(home)
  return home
}

test.beforeAll(async () => {
  const data = mkdtempSync(path.join(tmpdir(), 'agentmsg-trust-relay-'))
  homes.push(data)
  relay = spawn(process.execPath, [CLI, 'relay', '--data', data, '--port', '0', '--dev-tls'])
  url = await new Promise<string>((resolve, reject) => {
    let err = ''
    relay.stderr!.on('data', (d) => {
      err += d
      const found = /listening on (https:\/\/\S+) /.exec(err)
      if (found) resolve(found[1]!)
    })
    relay.on('exit', (code) => reject(new Error(`agentmsg relay exited ${code}: ${err}`)))
  })
})

test.afterAll(() => {
  relay?.kill('SIGTERM')
  for (const home of homes) rmSync(home, { recursive: true, force: true })
})

/** Open the relay's health page in Chromium with `home` as HOME; the error, if it failed. */
async function open(home: string): Promise<{ status?: number; error?: string }> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ARGS,
    env: { HOME: home },
  })
  try {
    const page = await (await browser.newContext()).newPage()
    const response = await page.goto(`${url}/healthz`)
    return { status: response?.status() }
  } catch (error) {
    return { error: (error as Error).message }
  } finally {
    await browser.close()
  }
}

test('Chromium trusts a --dev-tls server once agentmsg dev-ca trust imported the CA', async () => {
  expect(await open(newHome())).toEqual({ error: expect.stringContaining('net::ERR_CERT_') })

  const home = newHome()
  const trust = spawnSync(process.execPath, [CLI, 'dev-ca', 'trust', '--run', '--only', 'nss'], {
    env: { ...process.env, HOME: home },
    encoding: 'utf8',
  })
  expect(trust.status, trust.stderr).toBe(0)
  expect(trust.stdout).toContain(`certutil -d sql:${home}/.pki/nssdb -A -t C,, -n agentmsg-dev-ca`)
  expect(await open(home)).toEqual({ status: 200 })
})
