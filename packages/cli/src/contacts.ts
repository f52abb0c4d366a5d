import { type Contact, safeText } from '@agentmsg/client/node'
import { onAgent } from './agent-ops.js'
import {
  commandWithArgs,
  inputError,
  readUserFile,
  relayFlags,
  safeJson,
  usageError,
} from './command.js'

const HELP = `usage: agentmsg contacts --dir D list [--json]
       agentmsg contacts --dir D pin ID PUBLICKEY [--key-id K] [--relay URL ...]
       agentmsg contacts --dir D introduce --token-file F [--agent ID]
       agentmsg contacts --dir D remove ID

The agents D knows (PROFILE §5).
  list        every contact: known or not, its keys (with fingerprints) and relays (--json)
  pin         pin ID's Ed25519 public key (as "agentmsg identity" prints it) after comparing
              fingerprints out of band: ID's messages then verify at level 2. --key-id: the
              key's fragment (after #); --relay: where ID can be reached
  introduce   hold an introduction token (base64url of 32 random bytes) for ID (--agent) or
              the first sender it verifies: its greeting verifies at level 0. Prints its key id.
              The token is a secret: read from file F, or from stdin with --token-file -.
              On the command line (introduce TOKEN) other users see it (ps), so that is
              refused unless --token-on-argv is given
  remove      forget ID's keys, relays and known-contact mark

examples (PUBLIC_KEY and KEY_FRAGMENT as "agentmsg identity --dir ./bob" prints them):
  agentmsg contacts --dir ./alice pin https://127.0.0.1:8444 PUBLIC_KEY --key-id KEY_FRAGMENT
  agentmsg contacts --dir ./alice introduce --token-file - --agent https://127.0.0.1:8444 < token
`

/** A public key or an introduction token: 32 bytes, base64url without padding. */
export const KEY = /^[A-Za-z0-9_-]{43}$/
const MAX_TOKEN_BYTES = 1024

function contactLine(c: Contact): string {
  const keys = c.keys.length
    ? c.keys.map((k) => `${k.keyId} (${k.source}, ${k.fingerprint})`).join(', ')
    : 'no keys'
  const relays = c.relays.length ? `; relays ${c.relays.join(' ')}` : ''
  return safeText(`${c.agent}  ${c.knownContact ? 'known' : 'not known'}  ${keys}${relays}`)
}

const FLAGS = {
  dir: { type: 'string' },
  json: { type: 'boolean' },
  'key-id': { type: 'string' },
  relay: { type: 'string', multiple: true },
  agent: { type: 'string' },
  'token-file': { type: 'string' },
  'token-on-argv': { type: 'boolean' },
} as const

export const runContacts = commandWithArgs(HELP, FLAGS, async ({ values, positionals }) => {
  const [action, ...args] = positionals
  const dir = values.dir!
  // introduce takes its token from --token-file, or (with --token-on-argv) as its argument.
  const onArgv = action === 'introduce' && values['token-file'] === undefined
  const arity = { list: 0, pin: 2, introduce: onArgv ? 1 : 0, remove: 1 }[action ?? '']
  if (arity === undefined)
    throw usageError('contacts', 'contacts needs list, pin, introduce or remove')
  if (onArgv && args.length > 0 && !values['token-on-argv'])
    throw usageError(
      'contacts',
      'a token on the command line is visible to other users (ps) and kept in shell history: pass --token-file F, or --token-file - to read it from stdin (--token-on-argv to accept the risk)',
    )
  if (onArgv && args.length === 0)
    throw usageError('contacts', 'contacts introduce needs --token-file F (- reads stdin)')
  if (args.length !== arity)
    throw usageError(
      'contacts',
      `contacts ${action} takes ${arity || 'no'} argument${arity === 1 ? '' : 's'}`,
    )
  let out: string
  switch (action) {
    case 'list': {
      const list = (await onAgent(dir, { op: 'contacts.list' })) as Contact[]
      if (values.json) out = safeJson(list)
      else if (list.length) out = list.map(contactLine).join('\n')
      else out = `no contacts in ${dir} (agentmsg contacts pin adds one)`
      break
    }
    case 'pin': {
      const [agent, publicKey] = args as [string, string]
      if (!KEY.test(publicKey))
        throw inputError(
          `${publicKey.slice(0, 60)} is not an Ed25519 public key — pass the 43 base64url characters "agentmsg identity" prints as public key`,
        )
      const relays = values.relay?.length ? relayFlags('contacts', values.relay) : undefined
      const request = { agent, publicKey, keyId: values['key-id'], relays }
      out = `pinned ${contactLine((await onAgent(dir, { op: 'contacts.pin', ...request })) as Contact)}`
      break
    }
    case 'introduce': {
      const file = values['token-file']
      const token = (file === undefined ? args[0]! : await readToken(file)).trim()
      // Never echoed: the token is a shared secret.
      if (!KEY.test(token))
        throw inputError(
          'the token is not base64url of 32 bytes (43 characters) — check what you were given',
        )
      const request = { op: 'contacts.introduce' as const, token, agent: values.agent }
      const r = (await onAgent(dir, request)) as { key_id: string }
      const who = values.agent ?? 'the first sender whose greeting verifies with it'
      out = `holding introduction ${r.key_id} for ${safeText(who)}`
      break
    }
    default: {
      const [agent] = args as [string]
      await onAgent(dir, { op: 'contacts.remove', agent })
      out = `removed ${safeText(agent)}`
    }
  }
  process.stdout.write(`${out}\n`)
  return 0
})

/** The token in `file`, or on stdin for `-` (read up to a cap: a token is 43 characters). */
async function readToken(file: string): Promise<string> {
  if (file !== '-') return readUserFile(`--token-file ${file}`, file, MAX_TOKEN_BYTES)
  const chunks: Buffer[] = []
  let length = 0
  for await (const chunk of process.stdin) {
    chunks.push(chunk as Buffer)
    length += (chunk as Buffer).length
    if (length > MAX_TOKEN_BYTES)
      throw inputError(`--token-file -: more than ${MAX_TOKEN_BYTES} bytes on stdin`)
  }
  return Buffer.concat(chunks).toString('utf8')
}
