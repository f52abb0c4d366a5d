/** `--help`/`-h` on every command (with an example), `agentmsg --help` and `--version`. */
import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { run } from './cli-helpers.js'

const COMMANDS = [
  'init',
  'identity',
  'send',
  'listen',
  'inbox',
  'contacts',
  'subscribe',
  'unsubscribe',
  'publish',
  'group',
  'rotate',
  'relay',
  'doctor',
]

describe('help', () => {
  it('agentmsg --help, -h and no command list every command; exit 0', async () => {
    for (const args of [['--help'], ['-h'], []]) {
      const r = await run(args)
      expect(r.code).toBe(0)
      expect(r.stderr).toBe('')
      for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^  ${c} `, 'm'))
      expect(r.stdout).toMatch(/Exit codes: 0 .*; 1 .*; 2 usage or input error/)
    }
  })

  for (const command of COMMANDS) {
    it(`agentmsg ${command} --help and -h: usage and an example on stdout, exit 0`, async () => {
      for (const flag of ['--help', '-h']) {
        const r = await run([command, flag])
        expect(r.code).toBe(0)
        expect(r.stderr).toBe('')
        expect(r.stdout).toMatch(new RegExp(`^usage: agentmsg ${command} `))
        const examples = r.stdout.split(/\nexamples?\b[^\n]*:\n/)[1]
        expect(examples, r.stdout).toMatch(new RegExp(`^  agentmsg ${command} `, 'm'))
      }
      // `agentmsg help <command>` is the same text.
      expect((await run(['help', command])).stdout).toBe((await run([command, '--help'])).stdout)
    })
  }

  it('--version prints the package version', async () => {
    const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
    const r = await run(['--version'])
    expect(r).toEqual({ code: 0, stdout: `${manifest.version}\n`, stderr: '' })
  })
})
