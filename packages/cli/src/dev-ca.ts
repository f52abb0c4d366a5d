/**
 * `agentmsg dev-ca`: where this machine's development CA is, and the commands that make this
 * OS and its browsers trust it (or stop trusting it). Clients of the CLI pass it with `--ca`.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadDevCa } from '@agentmsg/dev-tls'
import { CliError, commandWithArgs, usageError } from './command.js'

const HELP = `usage: agentmsg dev-ca path
       agentmsg dev-ca trust [--run] [--only system|nss]

This machine's development CA ($AGENTMSG_HOME/dev-ca/ca.pem, AGENTMSG_HOME defaulting to
~/.agentmsg): every --dev-tls server (agentmsg inbox, relay, npm start) has a certificate from
it, and clients trust them all with this one file.
  path         print the CA's file (made on first use), what clients pass as --ca
  trust        print the commands that make this OS trust it (Debian/Ubuntu, macOS or Windows)
               and Chromium and Firefox (an NSS database), and the ones that undo them
  --run        run them (the system store's need root: sudo asks)
  --only       only the system store's, or only the NSS database's

examples:
  agentmsg send --dir ./bob --to ID --text hi --ca "$(agentmsg dev-ca path)"
  agentmsg dev-ca trust --run --only nss
`

const NAME = 'agentmsg-dev-ca'
type Cmd = string[]

/** `what`: the commands that trust `ca`, then the ones that undo that. */
function systemCommands(ca: string): { what: string; add: Cmd[]; remove: Cmd[] } {
  const sudo = process.getuid?.() === 0 ? [] : ['sudo']
  if (process.platform === 'darwin') {
    const keychain = '/Library/Keychains/System.keychain'
    return {
      what: 'macOS system keychain',
      add: [[...sudo, 'security', 'add-trusted-cert', '-d', '-r', 'trustRoot', '-k', keychain, ca]],
      remove: [[...sudo, 'security', 'remove-trusted-cert', '-d', ca]],
    }
  }
  if (process.platform === 'win32') {
    return {
      what: 'Windows root store (an administrator prompt)',
      add: [['certutil', '-addstore', '-f', 'ROOT', ca]],
      remove: [['certutil', '-delstore', 'ROOT', 'agentmsg development CA']],
    }
  }
  const file = `/usr/local/share/ca-certificates/${NAME}.crt`
  return {
    what: 'Debian/Ubuntu system store',
    add: [
      [...sudo, 'cp', ca, file],
      [...sudo, 'update-ca-certificates'],
    ],
    remove: [
      [...sudo, 'rm', file],
      [...sudo, 'update-ca-certificates', '--fresh'],
    ],
  }
}

/** Chromium and Firefox on Linux read an NSS database (Firefox: also each profile's). */
function nssCommands(ca: string): { what: string; add: Cmd[]; remove: Cmd[] } {
  const db = `sql:${path.join(os.homedir(), '.pki', 'nssdb')}`
  return {
    what: 'Chromium/Firefox NSS database (certutil: apt-get install libnss3-tools)',
    add: [['certutil', '-d', db, '-A', '-t', 'C,,', '-n', NAME, '-i', ca]],
    remove: [['certutil', '-d', db, '-D', '-n', NAME]],
  }
}

const quote = (arg: string) =>
  /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`
const shell = (cmd: Cmd) => cmd.map(quote).join(' ')

const FLAGS = { run: { type: 'boolean' }, only: { type: 'string' } } as const

export const runDevCa = commandWithArgs(HELP, FLAGS, async ({ values, positionals }) => {
  const [action, ...extra] = positionals
  if ((action !== 'path' && action !== 'trust') || extra.length)
    throw usageError('dev-ca', 'dev-ca needs path or trust')
  const { only } = values
  if (only !== undefined && only !== 'system' && only !== 'nss')
    throw usageError('dev-ca', `--only ${only}: use system or nss`)
  const ca = (await loadDevCa()).certFile
  if (action === 'path') {
    process.stdout.write(`${ca}\n`)
    return 0
  }
  const sets = [systemCommands(ca), nssCommands(ca)].filter((_, i) =>
    only === undefined ? process.platform !== 'win32' || i === 0 : only === ['system', 'nss'][i],
  )
  const out = [`development CA: ${ca}`]
  for (const { what, add, remove } of sets) {
    out.push(`# ${what}`, ...add.map(shell), `#   to undo: ${remove.map(shell).join(' && ')}`)
  }
  out.push('# Node clients: --ca FILE, or NODE_EXTRA_CA_CERTS=FILE')
  process.stdout.write(`${out.join('\n')}\n`)
  if (!values.run) return 0
  for (const { add } of sets) {
    // certutil makes no database: a new user's is made empty first.
    if (add[0]![0] === 'certutil' && process.platform !== 'win32') {
      const dir = path.join(os.homedir(), '.pki', 'nssdb')
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      spawnSync('certutil', ['-d', `sql:${dir}`, '-N', '--empty-password'], { stdio: 'ignore' })
    }
    for (const cmd of add) {
      const r = spawnSync(cmd[0]!, cmd.slice(1), { stdio: 'inherit' })
      if (r.status !== 0) {
        const why = r.error ? `${cmd[0]} was not found` : `it exited ${r.status ?? r.signal}`
        throw new CliError('failed', `${shell(cmd)}: ${why} — run the lines above yourself`)
      }
    }
  }
  process.stdout.write('trusted: restart the browser to use it\n')
  return 0
})
