/** The `agentmsg relay` command logic. */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fixtureAgent } from '@agentmsg/conformance'
import { agentmsgHome } from '@agentmsg/dev-tls'
import { describe, expect, it } from 'vitest'
import { relayClient } from '../../relay/test/helpers.js'
import { relayOptionsFromArgs, runRelayCommand } from '../src/relay/command.js'

describe('agentmsg relay', () => {
  it('serves with a development certificate and stops cleanly on a signal', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-relay-cli-'))
    try {
      const err: string[] = []
      let url = ''
      const code = await runRelayCommand(['--data', dir, '--port', '0', '--dev-tls'], {
        stderr: (t) => err.push(t),
        stopSignal: async (server) => {
          url = server.url
          // Its certificate is issued by the machine's development CA, which clients trust.
          const ca = await readFile(path.join(agentmsgHome(), 'dev-ca', 'ca.pem'), 'utf8')
          const bob = await fixtureAgent()
          const page = await relayClient(server.url, ca).retrieve(bob)
          expect(page.messages).toEqual([])
          return 'SIGTERM'
        },
      })
      expect(code).toBe(0)
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
      const text = err.join('')
      expect(text).toContain(path.join(dir, 'dev-tls', 'cert.pem'))
      expect(text).toContain('SIGTERM: stopping')
      expect((await stat(path.join(dir, 'dev-tls', 'key.pem'))).mode & 0o777).toBe(0o600)
      expect((await stat(path.join(dir, 'relay.sqlite'))).isFile()).toBe(true)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('uses the public URL given and refuses bad usage', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-relay-cli-'))
    try {
      let url = ''
      const code = await runRelayCommand(
        ['--data', dir, '--port', '0', '--dev-tls', '--public-url', 'HTTPS://Relay.Example/'],
        { stderr: () => undefined, stopSignal: async (s) => ((url = s.url), 'SIGINT') },
      )
      expect(code).toBe(0)
      expect(url).toBe('https://relay.example')
      const err: string[] = []
      expect(await runRelayCommand(['--port', '1'], { stderr: (t) => err.push(t) })).toBe(2)
      expect(err.join('')).toContain('--data')
      expect(await runRelayCommand(['--data', dir], { stderr: () => undefined })).toBe(2)
      // The relay-wide storage cap (PROFILE §9, default 10 GiB) and one address's share of it.
      const log = () => undefined
      const capped = await relayOptionsFromArgs(
        [
          '--data',
          dir,
          '--dev-tls',
          '--max-storage',
          '512MiB',
          '--max-storage-per-address',
          '64MiB',
        ],
        log,
      )
      expect(capped?.quota).toEqual({
        totalBytes: 512 * 1024 * 1024,
        bucketBytes: 64 * 1024 * 1024,
      })
      await expect(
        relayOptionsFromArgs(['--data', dir, '--dev-tls', '--max-storage', 'lots'], log),
      ).rejects.toThrow(/not a size/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
