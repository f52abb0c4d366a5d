/**
 * `agentmsg relay --config FILE` (limits and quotas of PROFILE §6 and §9, checked at
 * start: one line per bad value, exit 2; flags win over the file) and the operations flags
 * (`--metrics-port`, `--log-level`, `--shutdown-timeout`).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fixtureAgent } from '@agentmsg/conformance'
import { PROFILE } from '@agentmsg/core'
import { agentmsgHome } from '@agentmsg/dev-tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { relayClient } from '../../relay/test/helpers.js'
import { relayOptionsFromArgs, runRelayCommand } from '../src/relay/command.js'
import { relayConfigFrom } from '../src/relay/config.js'

const {
  relayRetentionMs: DEFAULT_RETENTION_MS,
  streamsPerAgent: DEFAULT_STREAMS_PER_AGENT,
  subscriptionsPerAgent: DEFAULT_SUBSCRIPTIONS_PER_AGENT,
  mailboxBytes: DEFAULT_QUOTA_BYTES,
  mailboxMessages: DEFAULT_QUOTA_MESSAGES,
  relayBytes: DEFAULT_QUOTA_TOTAL_BYTES,
} = PROFILE

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-relay-config-'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

let files = 0
async function configFile(content: unknown): Promise<string> {
  const file = path.join(dir, `config-${++files}.json`)
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content))
  return file
}

const log = () => undefined
const options = (...flags: string[]) =>
  relayOptionsFromArgs(['--data', dir, '--dev-tls', ...flags], log)

/** Run the command to its first failure; returns the exit code and what it printed on stderr. */
async function run(...flags: string[]): Promise<{ code: number; lines: string[] }> {
  const err: string[] = []
  const code = await runRelayCommand(['--data', dir, '--dev-tls', ...flags], {
    stderr: (t) => err.push(t),
    stopSignal: async () => 'SIGTERM',
  })
  return { code, lines: err.join('').split('\n').filter(Boolean) }
}

describe('relay --config', () => {
  it('reads limits, quotas, timeouts and retention; flags win over the file', async () => {
    const file = await configFile({
      limits: {
        perAddress: { rate: 'unlimited', burst: 500 },
        perSender: { rate: 120, burst: 40 },
        maxReadsPerAddress: 16,
        maxConcurrentReads: 256,
        streamsPerAgent: 8,
        streamsPerAddress: 16,
        maxUnsentBytes: '64MiB',
        subscriptionsPerAgent: 32,
      },
      quota: {
        messages: 20000,
        bytes: '512MiB',
        senderMessages: 100,
        senderBytes: 1048576,
        totalBytes: '20GiB',
        bucketBytes: '512MiB',
      },
      timeouts: { headersSeconds: 5, bodySeconds: 20, streamStallSeconds: 30 },
      retentionDays: 14,
      mailboxFullRetryAfter: 30,
    })
    const o = await options('--config', file, '--sender-burst', '50', '--max-storage', '1GiB')
    expect(o).toMatchObject({
      limits: {
        perAddress: { perMinute: Number.POSITIVE_INFINITY, burst: 500 },
        perSender: { perMinute: 120, burst: 50 },
        maxReadsPerAddress: 16,
        maxConcurrentReads: 256,
        streamsPerAgent: 8,
        streamsPerAddress: 16,
        maxUnsentBytes: 64 * 1024 ** 2,
        subscriptionsPerAgent: 32,
      },
      quota: {
        messages: 20_000,
        bytes: 512 * 1024 ** 2,
        senderMessages: 100,
        senderBytes: 1_048_576,
        totalBytes: 1024 ** 3,
        bucketBytes: 512 * 1024 ** 2,
      },
      headersTimeoutMs: 5_000,
      bodyTimeoutMs: 20_000,
      stallTimeoutMs: 30_000,
      retentionMs: 14 * 86_400_000,
      mailboxFullRetryAfter: 30,
      shutdownTimeoutMs: 10_000,
      logLevel: 'info',
    })
    expect(o?.metrics).toBeUndefined()
  })

  it('takes the README example, which states the defaults', async () => {
    const readme = await readFile(new URL('../../relay/README.md', import.meta.url), 'utf8')
    const block = /```json\n(\{\n {2}"limits"[\s\S]*?)```/.exec(readme)?.[1]
    expect(block).toBeDefined()
    expect(relayConfigFrom('README.md', JSON.parse(block!))).toEqual({
      limits: {
        perAddress: { perMinute: 600, burst: 100 },
        perSender: { perMinute: 60, burst: 20 },
        maxReadsPerAddress: 8,
        maxConcurrentReads: 128,
        maxTrackedKeys: 100_000,
        streamsPerAgent: DEFAULT_STREAMS_PER_AGENT,
        streamsPerAddress: PROFILE.streamsPerAddress,
        maxUnsentBytes: PROFILE.relayUnsentBytes,
        subscriptionsPerAgent: DEFAULT_SUBSCRIPTIONS_PER_AGENT,
      },
      quota: {
        messages: DEFAULT_QUOTA_MESSAGES,
        bytes: DEFAULT_QUOTA_BYTES,
        senderMessages: DEFAULT_QUOTA_MESSAGES / 4,
        senderBytes: DEFAULT_QUOTA_BYTES / 4,
        totalBytes: DEFAULT_QUOTA_TOTAL_BYTES,
      },
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 30_000,
      stallTimeoutMs: PROFILE.streamStallMs,
      retentionMs: DEFAULT_RETENTION_MS,
      mailboxFullRetryAfter: 60,
    })
  })

  it('reports every bad value on a line of its own, and exits 2', async () => {
    const file = await configFile({
      limits: {
        perSender: { rate: 0, burst: 2.5 },
        perAddress: { rate: 'lots' },
        streamsPerAgent: -1,
        maxReads: 3,
      },
      quota: { bytes: '12 parsecs', totalBytes: 0 },
      timeouts: 10,
      retentionDays: 3,
      port: 8443,
    })
    const { code, lines } = await run('--config', file)
    expect(code).toBe(2)
    const at = `agentmsg: invalid_config: ${file}:`
    expect(lines).toEqual([
      `${at} limits.perSender.rate: must be a positive number or "unlimited"`,
      `${at} limits.perSender.burst: must be a positive whole number`,
      `${at} limits.perAddress.rate: must be a positive number or "unlimited"`,
      `${at} limits.streamsPerAgent: must be a positive whole number`,
      `${at} limits.maxReads: unknown key (expected one of perAddress, perSender, maxReadsPerAddress, maxConcurrentReads, maxTrackedKeys, streamsPerAgent, streamsPerAddress, maxUnsentBytes, subscriptionsPerAgent)`,
      `${at} quota.bytes: must be a positive number of bytes, or a size such as "256MiB" (KiB, MiB, GiB)`,
      `${at} quota.totalBytes: must be a positive number of bytes, or a size such as "256MiB" (KiB, MiB, GiB)`,
      `${at} timeouts: must be a JSON object`,
      `${at} retentionDays: must be a number of days from 7 (PROFILE §9) to 3650`,
      `${at} port: unknown key (expected one of limits, quota, timeouts, retentionDays, mailboxFullRetryAfter, trustedProxies)`,
    ])
  })

  it('says so in one line when the file cannot be read or is not JSON', async () => {
    const missing = path.join(dir, 'missing.json')
    const read = await run('--config', missing)
    expect(read.code).toBe(2)
    expect(read.lines).toHaveLength(1)
    expect(read.lines[0]).toMatch(
      new RegExp(`^agentmsg: invalid_input: --config ${missing}: cannot be read: ENOENT`),
    )
    const notJson = await configFile('{"limits": ')
    const parsed = await run('--config', notJson)
    expect(parsed.code).toBe(2)
    expect(parsed.lines).toHaveLength(1)
    expect(parsed.lines).toEqual([`agentmsg: invalid_input: --config ${notJson}: is not JSON`])
    const array = await run('--config', await configFile([1, 2]))
    expect(array.lines).toEqual([expect.stringMatching(/: must be a JSON object$/)])
  })

  it('refuses bad operations flags (usage, exit 2)', async () => {
    for (const bad of [
      ['--log-level', 'loud'],
      ['--metrics-port', '70000'],
      ['--metrics-host', '0.0.0.0'],
      ['--shutdown-timeout', '0'],
      ['--shutdown-timeout', 'soon'],
    ]) {
      await expect(options(...bad)).rejects.toMatchObject({ code: 'usage', exitCode: 2 })
    }
  })

  it('runs with the file’s limits, metrics on loopback and JSON log lines', async () => {
    const file = await configFile({ limits: { perAddress: { rate: 1, burst: 2 } } })
    const err: string[] = []
    let metricsText = ''
    const statuses: number[] = []
    const code = await runRelayCommand(
      ['--data', dir, '--port', '0', '--dev-tls', '--config', file, '--metrics-port', '0'],
      {
        stderr: (t) => err.push(t),
        stopSignal: async (server) => {
          const ca = await readFile(path.join(agentmsgHome(), 'dev-ca', 'ca.pem'), 'utf8')
          const client = relayClient(server.url, ca)
          const bob = await fixtureAgent()
          const mailbox = `/relay/messages?agent=${encodeURIComponent(bob.id)}`
          for (let i = 0; i < 3; i++) statuses.push((await client.request('GET', mailbox)).status)
          metricsText = await (await fetch(server.metrics!.url)).text()
          return 'SIGTERM'
        },
      },
    )
    expect(code).toBe(0)
    // The file's burst of 2: the third request is over it.
    expect(statuses).toEqual([401, 401, 429])
    expect(metricsText).toContain('agentmsg_relay_rate_limited_total{scope="address"} 1')
    const lines = err
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: number; msg: string; code?: string })
    const messages = lines.map((l) => l.msg)
    expect(messages[0]).toMatch(/^development CA: /)
    expect(messages[1]).toMatch(
      /^listening on https:\/\/127\.0\.0\.1:\d+ \(data in .+\); metrics on http:\/\/127\.0\.0\.1:\d+\/metrics; Ctrl-C stops$/,
    )
    expect(lines.filter((l) => l.msg === 'refused').map((l) => l.code)).toEqual([
      'unauthorized',
      'unauthorized',
      'rate_limited',
    ])
    expect(messages.slice(-2)).toEqual(['SIGTERM: stopping', 'stopped'])
  })
})
