import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fsStorage } from '../src/index.js'
import { bundleSource, kill, startChild, tempDir } from './helpers.js'

const KEYS = 20
const ROUNDS = 20
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

describe('fsStorage under SIGKILL', () => {
  let work: string
  let bundle: string

  beforeAll(async () => {
    work = await tempDir()
    bundle = await bundleSource(work)
  })

  afterAll(async () => {
    await rm(work, { recursive: true, force: true })
  })

  it('keeps every batch all-or-nothing and every acknowledged batch present', async () => {
    const dir = join(work, 'store')
    let committed = 0 // the sequence number all keys carry, 0 = none yet
    const counts = { rounds: 0, acknowledged: 0, inFlightKept: 0, inFlightLost: 0, replayed: 0 }

    for (let round = 0; round < ROUNDS; round++) {
      const { child, lines, waitFor } = startChild(bundle, ['batches', dir, String(KEYS)])
      // Most kills land while batches are being written; every fourth one at a random moment
      // from process start, so some also land during open and journal replay.
      if (round % 4 === 3) await sleep(100 + Math.random() * 300)
      else await waitFor(/^start /).then(() => sleep(Math.random() * 250))
      await kill(child)
      counts.rounds++

      const acks = lines.filter((l) => l.startsWith('ok ')).map((l) => Number(l.slice(3)))
      counts.acknowledged += acks.length
      const lastAck = acks.length > 0 ? acks[acks.length - 1]! : committed
      if (existsSync(join(dir, 'data', 'journal'))) counts.replayed++

      const storage = await fsStorage({ dir })
      const values = await Promise.all(
        Array.from({ length: KEYS }, (_, i) => storage.get(`b/${i}`)),
      )
      const seqs = values.map((v) => (v as { seq: number } | undefined)?.seq ?? 0)
      const seq = seqs[0]!
      // All-or-nothing: every key of the batch carries the same sequence number...
      expect(seqs).toEqual(Array.from({ length: KEYS }, () => seq))
      values.forEach((v, i) => expect(v === undefined || (v as { i: number }).i === i).toBe(true))
      // ...and the delete + put of the marker in the same batch went with it.
      expect(await storage.list('m/')).toEqual(seq === 0 ? [] : [[`m/${seq}`, seq]])
      // Every acknowledged batch is there; at most the one in flight at the kill is extra.
      expect(seq === lastAck || seq === lastAck + 1).toBe(true)
      if (acks.length > 0 || lines.some((l) => l.startsWith('start '))) {
        if (seq === lastAck + 1) counts.inFlightKept++
        else counts.inFlightLost++
      }
      committed = seq
      await storage.close?.()
    }

    console.log(`crash test: ${JSON.stringify({ ...counts, finalSeq: committed })}`)
    expect(counts.acknowledged).toBeGreaterThan(0)
  })
})
