/**
 * The README's "A first hour, on one machine", run as written: its block split at its
 * `# Terminal N` comments, each terminal one `sh` (the servers in the background), with
 * `agentmsg` on PATH and a fresh working directory. Only its ports change (free ones, so runs
 * in parallel do not collide). What the README promises there is what is checked.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { fences } from '../../../test/docs/readme-blocks.js'
import { CLI_ARGS, cliBuilt, eventually, freePort } from './cli-helpers.js'

const block = fences('packages/cli/README.md').find(
  (f) => f.section === 'A first hour, on one machine' && f.lang === 'sh',
)!.code

/** A directory holding an `agentmsg` that runs the CLI under test (as `npm link` would). */
function pathWithCli(): string {
  const bin = mkdtempSync(path.join(tmpdir(), 'agentmsg-bin-'))
  const args = [process.execPath, ...CLI_ARGS].map((a) => `'${a}'`).join(' ')
  writeFileSync(path.join(bin, 'agentmsg'), `#!/bin/sh\nexec ${args} "$@"\n`)
  chmodSync(path.join(bin, 'agentmsg'), 0o755)
  return `${bin}${path.delimiter}${process.env.PATH}`
}

interface Shell {
  child: ChildProcess
  out: () => string
  err: () => string
  exited: Promise<number | null>
}

const shells: Shell[] = []

describe.runIf(cliBuilt())("the CLI README's first hour", () => {
  afterAll(() => {
    for (const s of shells) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  })

  it('prints what it promises, and every server stops on Ctrl-C with exit 0', {
    timeout: 120_000,
  }, async () => {
    const [inboxPort, relayPort] = [await freePort(), await freePort()]
    const text = block.replaceAll('8444', `${inboxPort}`).replaceAll('9443', `${relayPort}`)
    const [preamble, ...terminals] = text.split(/^# Terminal \d+: .*$/m)
    expect(terminals).toHaveLength(4)
    const cwd = mkdtempSync(path.join(tmpdir(), 'agentmsg-first-hour-'))
    const env = { ...process.env, PATH: pathWithCli() }
    const sh = (script: string): Shell => {
      // Its own process group: Ctrl-C reaches the whole terminal. bash, as a terminal's: it
      // waits for a command that handles Ctrl-C (dash, Debian's sh, dies of it at once).
      const child = spawn('bash', ['-ec', `${preamble}\n${script}`], { cwd, env, detached: true })
      let out = ''
      let err = ''
      child.stdout!.on('data', (d) => (out += d))
      child.stderr!.on('data', (d) => (err += d))
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
      const s = { child, out: () => out, err: () => err, exited }
      shells.push(s)
      return s
    }
    const servers: Shell[] = []
    for (const script of terminals.slice(0, 3)) {
      const s = sh(script)
      servers.push(s)
      await eventually(() => (/listening on/.test(s.err()) ? true : undefined))
    }
    const [bob, relay, alice] = servers as [Shell, Shell, Shell]
    const t4 = sh(terminals[3]!)
    expect(await t4.exited, t4.err()).toBe(0)

    const relayUrl = `https://127.0.0.1:${relayPort}`
    const bobId = `https://127.0.0.1:${inboxPort}`
    const [sent, ...contacts] = t4.out().trim().split('\n')
    expect(sent).toMatch(new RegExp(`^accepted \\S+ via relay ${relayUrl}, sealed, conversation `))
    // Alice's did:key, with its key (the id) and the relay that took bob's message.
    expect(contacts).toEqual([
      expect.stringMatching(
        new RegExp(
          `^did:key:z\\S+  not known  did:key:\\S+#z\\S+ \\(did:key, [a-z2-7-]+\\); relays ${relayUrl}$`,
        ),
      ),
    ])
    const line = await eventually(() =>
      alice
        .out()
        .split('\n')
        .find((l) => l.includes('hello')),
    )
    expect(line).toMatch(new RegExp(`^\\d{4}-\\S+Z  ${bobId}  level 2 new  sealed  hello alice$`))
    for (const s of [alice, relay, bob]) {
      process.kill(-s.child.pid!, 'SIGINT')
      expect(await s.exited, s.err()).toBe(0)
    }
    // Not a terminal: what they report is one JSON object per line, as the relay's logs.
    for (const s of [alice, bob]) {
      const lines = s.err().trim().split('\n')
      expect(lines.map((l) => JSON.parse(l).msg)).toContain('SIGINT: stopping')
    }
  })
})
