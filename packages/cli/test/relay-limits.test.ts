/** `agentmsg relay` rate-limit flags (a load test from one machine needs them raised). */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { relayOptionsFromArgs } from '../src/relay/command.js'
import { RELAY_USAGE } from '../src/relay/settings.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-relay-cli-'))
  process.env.AGENTMSG_HOME = path.join(dir, 'home')
})
afterAll(() => rm(dir, { recursive: true, force: true }))

const log = () => undefined
const options = (...flags: string[]) =>
  relayOptionsFromArgs(['--data', dir, '--dev-tls', ...flags], log)

describe('agentmsg relay limits', () => {
  it('keeps the PROFILE §6 defaults when no flag is given', async () => {
    expect((await options())?.limits).toBeUndefined()
  })

  it('raises or lifts the per-address and per-sender limits', async () => {
    expect(
      (await options('--rate-limit', 'unlimited', '--sender-rate-limit', 'unlimited'))?.limits,
    ).toEqual({
      perAddress: { perMinute: Number.POSITIVE_INFINITY },
      perSender: { perMinute: Number.POSITIVE_INFINITY },
    })
    expect(
      (
        await options(
          '--rate-limit',
          '120000',
          '--burst',
          '5000',
          '--sender-burst',
          '50',
          '--max-reads-per-address',
          '64',
          '--streams-per-agent',
          '8',
        )
      )?.limits,
    ).toEqual({
      perAddress: { perMinute: 120_000, burst: 5_000 },
      perSender: { burst: 50 },
      maxReadsPerAddress: 64,
      streamsPerAgent: 8,
    })
  })

  it('refuses what is not a positive whole number (usage, exit 2)', async () => {
    for (const bad of [
      ['--rate-limit', '0'],
      ['--rate-limit', '1.5'],
      ['--burst', 'unlimited'],
      ['--streams-per-agent', '-1'],
    ]) {
      await expect(options(...bad)).rejects.toMatchObject({ code: 'usage', exitCode: 2 })
    }
  })

  it('documents the flags in --help', () => {
    for (const flag of ['--rate-limit', '--sender-rate-limit', '--streams-per-agent'])
      expect(RELAY_USAGE).toContain(flag)
  })
})

describe('agentmsg relay --trusted-proxies and --store (several nodes behind a balancer)', () => {
  it('takes proxy addresses and ranges, comma-separated or repeated; refuses anything else', async () => {
    const given = await options(
      '--trusted-proxies',
      '10.0.0.1, 10.1.0.0/16',
      '--trusted-proxies',
      '::1',
    )
    expect(given?.trustedProxies).toEqual(['10.0.0.1', '10.1.0.0/16', '::1'])
    for (const bad of ['lb.example', '10.0.0.0/33', '10.0.0.1/x']) {
      await expect(options('--trusted-proxies', bad)).rejects.toMatchObject({
        code: 'usage',
        exitCode: 2,
      })
    }
    expect(RELAY_USAGE).toContain('--trusted-proxies')
  })

  it('takes a postgres:// store URL and schema; refuses other URLs and bad schema names', async () => {
    const given = await options(
      '--store',
      'postgres://relay@db.internal:5432/agentmsg',
      '--store-schema',
      'relay_a',
    )
    expect(given?.postgres).toEqual({
      url: 'postgres://relay@db.internal:5432/agentmsg',
      schema: 'relay_a',
    })
    for (const bad of [
      ['--store', 'mysql://db/x'],
      ['--store', 'not a url'],
      ['--store', 'postgres://db/x', '--store-schema', 'Bad-Name'],
      ['--store-schema', 'relay_a'],
    ]) {
      await expect(options(...bad)).rejects.toMatchObject({ code: 'usage', exitCode: 2 })
    }
  })
})
