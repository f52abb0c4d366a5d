/**
 * One side of the demo: a relay-only browser agent as an application makes one (`createAgent`
 * with a did:key identity kept in IndexedDB and one relay), its chat history, and what the
 * receive pipeline says about every message it hands over: the authentication level and
 * whether the sender is a known contact (PROFILE §5), the relay it came through and the relays'
 * trace hops (SPEC §2.7), and whether its body was sealed (PROFILE §8) — or, for a room message,
 * sealed for the other members only. Text is only ever set as text (never parsed as HTML):
 * messages come from anyone who knows the agent's id.
 */
import { type Agent, createAgent, type Group, type ReceivedMessage } from '@agentmsg/client'
import { publicKeyFromDidKey } from '@agentmsg/core'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'
import { type Attrs, el, short } from './dom.js'
import { openHistory, type Row } from './history.js'
import { watchStream } from './online.js'
import { inWords } from './words.js'

export interface PaneOptions {
  /** Short key, used in test ids: `alice`. */
  key: string
  /** Shown name: `Alice`. */
  name: string
  /** This pane's IndexedDB database. */
  dbName: string
  /** The relay (the page's own origin). */
  relay: string
  /** How the relay streams to this agent. */
  mode: 'sse' | 'ws'
  /** Where the pane goes. */
  container: HTMLElement
  /** Names of the agents on the page, by id (for labels). */
  names: Map<string, string>
  /** The room's topic: subscribed to, and offered as a place to post. */
  room: string
  /** This agent's relay stream opened (`true`) or closed. */
  onOnline(online: boolean): void
}

export interface Pane {
  readonly id: string
  readonly key: string
  readonly name: string
  /** This agent's member list of the room; what it posts there is sealed for them. */
  readonly room: Group
  /** Whether this agent is in the room's list now (a removed one does not post there). */
  setMember(member: boolean): void
  /**
   * Show the history, then the messages as they come (the agent holds them until then), and
   * offer `peers` to write to. Called once every pane is open, so that names are known.
   */
  start(peers: string[]): Promise<void>
  close(): Promise<void>
}

/** PROFILE §5: what each level says about how the key is bound to the sender's id. */
const LEVELS: Record<number, string> = {
  0: 'shared secret (introduction token)',
  1: 'key learned in an introduction',
  2: 'key from an identity document over https, or pinned',
  3: 'key bound to the id itself (did:key)',
}

/** What a room message sealed for the other members shows instead of its text. */
export const NOT_FOR_ME = 'sealed for others — not for me'

export async function openPane(o: PaneOptions): Promise<Pane> {
  const label = (id: string) => o.names.get(id) ?? short(id)
  const history = await openHistory(o.dbName)
  const errors = el('p', { class: 'errors', 'data-testid': `errors-${o.key}`, role: 'alert' })
  const report = (e: unknown) => {
    errors.textContent = inWords(e)
    errors.title = e instanceof Error ? e.message : String(e)
    console.warn(`${o.name}:`, e)
  }
  const state = el('span', { class: 'state', 'data-testid': `state-${o.key}` }, 'connecting…')
  // Online follows the relay stream; its recovery clears what went wrong while it was down.
  const stream = watchStream((online) => {
    if (state.dataset.online === String(online)) return
    state.dataset.online = String(online)
    state.textContent = online ? '● online' : '○ offline, reconnecting…'
    if (online) errors.textContent = errors.title = ''
    o.onOnline(online)
  })
  const agent: Agent = await createAgent({
    storage: await indexedDbStorage({ dbName: o.dbName }),
    relays: [o.relay],
    mode: o.mode,
    onError: report,
    streamFetch: stream.streamFetch,
    WebSocket: stream.WebSocket,
  })
  o.names.set(agent.id, o.name)
  // Subscribed once: the subscription is kept in IndexedDB and outlives a reload.
  if (!agent.topics().includes(o.room)) await agent.subscribe(o.room)
  const room = agent.group(o.room)
  let member = true
  /** The compose list's entry for the room (its value is no agent id). */
  const roomOption = el('option', { value: `topic:${o.room}` }, `room ${o.room}`)

  const log = el('ol', { class: 'log', 'data-testid': `log-${o.key}`, 'aria-live': 'polite' })
  const to = el('select', { name: 'to', 'data-testid': `to-${o.key}`, 'aria-label': 'send to' })
  const text = el('input', {
    type: 'text',
    name: 'text',
    required: '',
    maxlength: '2000',
    placeholder: 'a message',
    'data-testid': `text-${o.key}`,
    'aria-label': 'message',
  })
  const send = el('button', { type: 'submit', 'data-testid': `send-${o.key}` }, 'Send')
  const form = el('form', { class: 'compose' }, to, text, send)
  const section = el(
    'section',
    { class: 'pane', 'data-testid': `pane-${o.key}`, 'data-agent-id': agent.id },
    el('h2', {}, o.name, ' ', state),
    el(
      'p',
      { class: 'who' },
      el('code', { 'data-testid': `id-${o.key}`, title: agent.id }, agent.id),
      ` · IndexedDB “${o.dbName}” · receives over ${o.mode === 'ws' ? 'WebSocket' : 'SSE'} from ${o.relay}`,
    ),
    log,
    form,
    errors,
  )
  o.container.append(section)
  /** Known contacts now (a row says what was true when its message arrived). */
  const known = new Set<string>()
  const PINNED = '(pinned since)'

  /** Pin `peer` (its did:key is its key): later messages from it come from a known contact. */
  async function pin(peer: string) {
    await agent.contacts.pin(peer, publicKeyFromDidKey(peer))
    known.add(peer)
    for (const b of log.querySelectorAll<HTMLButtonElement>('button[data-pin]')) {
      if (b.dataset.pin === peer) b.replaceWith(PINNED)
    }
  }

  function facts(row: Row): HTMLElement {
    const items: Array<HTMLElement> = []
    const fact = (text: string, attrs: Attrs = {}) => {
      const li = el('li', attrs, text)
      items.push(li)
      return li
    }
    if (row.direction === 'out' && row.topic) fact(`to room ${row.topic}`)
    else fact(`${row.direction === 'in' ? 'from' : 'to'} ${label(row.peer)}`, { title: row.peer })
    if (row.direction === 'in' && row.topic) fact(`in room ${row.topic}`)
    if (row.direction === 'in') {
      fact(`level ${row.level}`, { title: LEVELS[row.level ?? -1] ?? '' })
      const contact = fact(`known contact: ${row.knownContact ? 'yes' : 'no'}`, {
        class: row.knownContact ? 'yes' : 'no',
        title: 'pinned, introduced or accepted before (PROFILE §5): anyone can mint a did:key',
      })
      if (!row.knownContact && known.has(row.peer)) contact.append(' ', PINNED)
      else if (!row.knownContact && row.peer.startsWith('did:key:')) {
        const button = el('button', { type: 'button', 'data-pin': row.peer }, 'Pin')
        button.addEventListener('click', () => void pin(row.peer).catch(report))
        contact.append(' ', button)
      }
    }
    fact(`route: relay ${row.relayUrl ?? '?'}`)
    // The trace is shown when it says more than the route: a hop besides that relay.
    if (row.trace?.some((h) => h.by !== `relay:${row.relayUrl}`)) {
      const hops = row.trace.map((h) => `${h.by} at ${h.at.slice(11, 23)}`).join(' → ')
      fact(`trace: ${hops}`, { class: 'trace' })
    }
    // A room message sealed for others says so in place of its text.
    if (row.sealed !== 'not-for-me') {
      fact(row.sealed ? 'sealed ✓' : 'plaintext', { class: row.sealed ? 'yes' : 'no' })
    }
    if (row.sealedFor) fact(`readable by ${row.sealedFor.map(label).join(', ')}`)
    return el('ul', { class: 'facts' }, ...items)
  }

  function show(row: Row) {
    const attrs: Attrs = {
      class: `msg ${row.direction}`,
      'data-direction': row.direction,
      'data-message-id': row.messageId,
      'data-peer': row.peer,
      'data-route': row.relayUrl ?? '',
      'data-sealed': String(row.sealed),
    }
    if (row.topic) attrs['data-topic'] = row.topic
    if (row.direction === 'in') {
      attrs['data-level'] = String(row.level)
      attrs['data-known'] = String(row.knownContact)
      attrs['data-trace'] = (row.trace ?? []).map((h) => h.by).join(' ')
    }
    const text =
      row.sealed === 'not-for-me'
        ? el('p', { class: 'text not-for-me' }, NOT_FOR_ME)
        : el('p', { class: 'text' }, row.text)
    log.append(el('li', attrs, text, facts(row)))
    log.scrollTop = log.scrollHeight
  }

  async function keep(row: Row) {
    if (await history.add(row)) show(row)
  }

  async function sendTo(peer: string, message: string): Promise<Row> {
    // A did:key is reached through the relays named here (the recipient's, known out of band).
    const r = await agent.send(peer, message, { relays: [o.relay] })
    const { messageId, relayUrl, sealed } = r
    return {
      direction: 'out',
      messageId,
      peer,
      text: message,
      shownAt: Date.now(),
      relayUrl,
      sealed,
    }
  }

  async function postToRoom(message: string): Promise<Row> {
    if (!member) throw new Error(`${o.name} was removed from ${o.room}: it no longer posts there`)
    // Sealed for the members of this agent's list as it is now (PROFILE §8).
    const r = await room.publish(message)
    return {
      direction: 'out',
      messageId: r.messageId,
      peer: o.room,
      topic: o.room,
      text: message,
      shownAt: Date.now(),
      relayUrl: r.relayUrl,
      sealed: r.sealedFor.length > 0,
      sealedFor: r.sealedFor,
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const message = text.value
    const peer = to.value
    send.disabled = true
    ;(peer === roomOption.value ? postToRoom(message) : sendTo(peer, message))
      .then(keep)
      .then(() => {
        text.value = ''
        errors.textContent = ''
      })
      .catch(report)
      .finally(() => {
        send.disabled = false
      })
  })

  return {
    id: agent.id,
    key: o.key,
    name: o.name,
    room,
    setMember(now) {
      member = now
      roomOption.disabled = !now
      roomOption.textContent = now ? `room ${o.room}` : `room ${o.room} (removed)`
      section.dataset.member = String(now)
    },
    async start(peers) {
      to.replaceChildren(...peers.map((p) => el('option', { value: p }, label(p))), roomOption)
      for (const c of await agent.contacts.list()) if (c.knownContact) known.add(c.agent)
      for (const row of await history.all()) show(row)
      // Awaited by the agent before it acknowledges: a message is in the history before the
      // relay may drop it.
      // The relay hands a room message to every subscriber, its poster too: shown once, as sent.
      agent.on('message', async (m: ReceivedMessage) => {
        if (!(m.topic && m.from === agent.id)) await keep(receivedRow(m, o.relay))
      })
      agent.on('error', (e) => report(e.error))
      section.dataset.ready = 'true'
    },
    close: () => agent.close(),
  }
}

/** What the pane keeps of a received message. */
function receivedRow(m: ReceivedMessage, relay: string): Row {
  const trace = (m.message.trace?.received ?? []).map((h) => ({ by: h.by, at: h.at }))
  const byRelay = [...trace].reverse().find((h) => h.by.startsWith('relay:'))
  return {
    direction: 'in',
    messageId: m.message.message_id,
    peer: m.from,
    text: m.text,
    shownAt: Date.now(),
    relayUrl: byRelay ? byRelay.by.slice('relay:'.length) : relay,
    sealed: m.sealed === 'not-for-me' ? 'not-for-me' : m.sealed === true,
    ...(m.topic ? { topic: m.topic } : {}),
    level: m.level,
    knownContact: m.knownContact,
    trace,
  }
}
