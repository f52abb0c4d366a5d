/**
 * The room: a topic that every agent of the page and Echo subscribe to (PROFILE §9 pub/sub),
 * and its member list. Each pane's agent keeps its own list for the topic (`agent.group()`, in
 * its IndexedDB) and seals what it posts there for those members, one sealed part each
 * (PROFILE §8). This panel keeps the three lists in step, as the members of a real room would
 * agree on one. Removing a member changes who can open the NEXT messages: the ones it read stay
 * read, and its pane shows what comes after as sealed for others.
 */
import { el } from './dom.js'
import type { Pane } from './pane.js'
import { inWords } from './words.js'

/** Someone who can be in the room: a pane's agent or Echo. */
export type Person = Pick<Pane, 'id' | 'key' | 'name'>

export interface RoomOptions {
  topic: string
  panes: Pane[]
  /** Everyone who can be in the room, in the order shown. */
  people: Person[]
  container: HTMLElement
}

export async function openRoom(o: RoomOptions): Promise<void> {
  const list = el('ul', { class: 'members', 'data-testid': 'members' })
  const errors = el('p', { class: 'errors', role: 'alert' })
  o.container.append(
    el('h2', {}, `Room `, el('code', {}, o.topic)),
    el(
      'p',
      {},
      'Everyone here is subscribed to this topic on the relay. Post to it from any pane (pick ',
      el('em', {}, `room ${o.topic}`),
      '): the message is sealed for the members below. Remove one, and what is posted next is ',
      'sealed without it: its pane shows it as sealed for others. Echo answers what it can open.',
    ),
    list,
    errors,
  )

  // Alice's list stands for the room's; an empty one (the first start) is everyone.
  const first = o.panes[0]
  if (!first) throw new Error('the room needs a pane')
  const stored = await first.room.members()
  let members = new Set(stored.length > 0 ? stored : o.people.map((p) => p.id))
  // One change at a time, each from the list the previous one left.
  let changing: Promise<void> = Promise.resolve()

  /** Make every pane's list `next`, then show it. */
  async function apply(next: Set<string>): Promise<void> {
    for (const pane of o.panes) {
      const had = await pane.room.members()
      const gone = had.filter((id) => !next.has(id))
      const added = [...next].filter((id) => !had.includes(id))
      if (gone.length > 0) await pane.room.remove(...gone)
      if (added.length > 0) await pane.room.add(...added)
      pane.setMember(next.has(pane.id))
    }
    members = next
    render()
  }

  function toggle(id: string): void {
    changing = changing
      .then(() => {
        const next = new Set(members)
        if (!next.delete(id)) next.add(id)
        errors.textContent = ''
        return apply(next)
      })
      .catch((e: unknown) => {
        errors.textContent = inWords(e)
        console.warn('room:', e)
      })
  }

  function render(): void {
    const rows = o.people.map((p) => {
      const inRoom = members.has(p.id)
      const button = el(
        'button',
        { type: 'button', 'data-testid': `${inRoom ? 'remove' : 'add'}-${p.key}` },
        inRoom ? 'Remove' : 'Add back',
      )
      button.addEventListener('click', () => {
        button.disabled = true
        toggle(p.id)
      })
      const attrs = { 'data-testid': `member-${p.key}`, 'data-member': String(inRoom) }
      return el('li', attrs, p.name, inRoom ? ' ' : ' (removed) ', button)
    })
    list.replaceChildren(...rows)
  }

  await apply(members)
  o.container.dataset.ready = 'true'
}
