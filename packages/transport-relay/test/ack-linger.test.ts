/**
 * AckBatcher `lingerMs` (issue 12): entries wait for company instead of one signed
 * `POST /relay/ack` per round trip; a full batch and `flush()` do not wait.
 */
import { describe, expect, it } from 'vitest'
import { AckBatcher } from '../src/client/ack-batch.js'
import { until } from './client-fixtures.js'

const from = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'

function recorder() {
  const sent: string[][] = []
  const send = async (entries: Array<{ messageId: string }>) => {
    sent.push(entries.map((e) => e.messageId))
  }
  return { sent, send }
}

describe('AckBatcher lingerMs', () => {
  it('gathers entries while they linger, and sends them once the linger is over', async () => {
    const { sent, send } = recorder()
    const held = new AckBatcher(send, () => {}, 500, 3_600_000)
    for (const id of ['a', 'b', 'c']) await held.add({ messageId: id, from })
    await new Promise((r) => setTimeout(r, 20))
    expect(sent).toEqual([])
    await held.flush()
    expect(sent).toEqual([['a', 'b', 'c']])

    const short = new AckBatcher(send, () => {}, 500, 10)
    await short.add({ messageId: 'd', from })
    await until(() => sent.length === 2)
    expect(sent[1]).toEqual(['d'])
  })

  it('sends a full batch at once, and everything at flush()', async () => {
    const { sent, send } = recorder()
    // A linger no test waits out: only fullness and flush() send.
    const batcher = new AckBatcher(send, () => {}, 2, 3_600_000)
    for (const id of ['a', 'b', 'c']) await batcher.add({ messageId: id, from })
    await until(() => sent.length === 1)
    expect(sent).toEqual([['a', 'b']])
    await batcher.flush()
    expect(sent).toEqual([['a', 'b'], ['c']])
  })
})
