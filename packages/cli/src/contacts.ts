import { type Contact, safeText } from '@agentmsg/client/node'
import { onAgent } from './agent-ops.js'
import { commandWithArgs, inputError, relayFlags, safeJson, usageError } from './command.js'

const HELP = `usage: agentmsg contacts --dir D list [--json]
       agentmsg contacts --dir D pin ID PUBLICKEY [--key-id K] [--relay URL ...]
       agentmsg contacts --dir D introduce TOKEN [--agent ID]
       agentmsg contacts --dir D remove ID

The agents D knows (PROFILE §5).
  list        every contact: known or not, its keys (with fingerprints) and relays (--json)
  pin         pin ID's Ed25519 public key (as "agentmsg identity" prints it) after comparing
              fingerprints out of band: ID's messages then verify at level 2. --key-id: the
              key's fragment (after #); --relay: where ID can be reached
  introduce   hold an introduction token (base64url of 32 random bytes) for ID (--agent) or
              the first sender it verifies: its greeting verifies at level 0. Prints its key id
  remove      forget ID's keys, relays and known-contact mark

example (PUBLIC_KEY and KEY_FRAGMENT as "agentmsg identity --dir ./bob" prints them):
  agentmsg contacts --dir ./alice pin https://127.0.0.1:8444 PUBLIC_KEY --key-id KEY_FRAGMENT
`

const KEY = /^[A-Za-z0-9_-]{43}$/ // 32 bytes, base64url without padding

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
} as const

export const runContacts = commandWithArgs(HELP, FLAGS, async ({ values, positionals }) => {
  const [action, ...args] = positionals
  const dir = values.dir!
  const arity = { list: 0, pin: 2, introduce: 1, remove: 1 }[action ?? '']
  if (arity === undefined)
    throw usageError('contacts', 'contacts needs list, pin, introduce or remove')
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
      const [token] = args as [string]
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
