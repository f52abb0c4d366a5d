// Small timing helpers shared by the benchmarks. Every figure is printed beside a baseline
// measured in the same run, on the same machine, so ratios stay meaningful on shared hosts.

/** Run `fn` (sync or async) repeatedly for at least `ms` after a warm-up; returns ops/s. */
export async function opsPerSec(fn, { ms = 1500, warmupMs = 300, batch = 1 } = {}) {
  const end0 = performance.now() + warmupMs
  while (performance.now() < end0) await fn()
  let n = 0
  const start = performance.now()
  let now = start
  while (now - start < ms) {
    await fn()
    n += batch
    now = performance.now()
  }
  return (n * 1000) / (now - start)
}

/** Like opsPerSec for a synchronous function, without awaiting (no microtask cost). */
export function opsPerSecSync(fn, { ms = 1500, warmupMs = 300 } = {}) {
  const end0 = performance.now() + warmupMs
  while (performance.now() < end0) fn()
  let n = 0
  const start = performance.now()
  let now = start
  while (now - start < ms) {
    for (let i = 0; i < 16; i++) fn()
    n += 16
    now = performance.now()
  }
  return (n * 1000) / (now - start)
}

/** Keep `concurrency` calls of `fn` in flight for `ms`; returns completed ops/s. */
export async function opsPerSecConcurrent(
  fn,
  { ms = 1500, warmupMs = 300, concurrency = 64 } = {},
) {
  async function run(duration) {
    let n = 0
    const end = performance.now() + duration
    const worker = async () => {
      while (performance.now() < end) {
        await fn()
        n++
      }
    }
    const start = performance.now()
    await Promise.all(Array.from({ length: concurrency }, worker))
    return (n * 1000) / (performance.now() - start)
  }
  await run(warmupMs)
  return run(ms)
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i]
}

const fmt = (n) =>
  Number.isFinite(n) ? (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2)) : String(n)

/** "met" / "missed" for a target like `≥ 0.8×` or `≤ 5×` given the ratio; '' for context rows. */
export function targetVerdict(ratio, target) {
  const m = /^([≥≤])\s*([0-9.]+)×/.exec(target ?? '')
  if (!m || ratio === undefined || !Number.isFinite(ratio)) return ''
  const limit = Number(m[2])
  return (m[1] === '≥' ? ratio >= limit : ratio <= limit) ? 'met' : 'missed'
}

/**
 * Print rows `{name, value, unit, baseline, baselineName, ratio, target}` as a table; a
 * numeric target gets "met" or "missed" beside it.
 */
export function printTable(title, rows) {
  console.log(`\n## ${title}`)
  const lines = rows.map((r) => [
    r.name,
    `${fmt(r.value)} ${r.unit ?? ''}`.trim(),
    r.baseline === undefined ? '' : `${fmt(r.baseline)} ${r.unit ?? ''} (${r.baselineName})`,
    r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}×`,
    // `verdict`: a row whose target is not a ratio (e.g. `p99 ≤ 50 ms`) says met/missed itself.
    [r.target ?? '', r.verdict ?? targetVerdict(r.ratio, r.target)].filter(Boolean).join(' — '),
  ])
  const head = ['case', 'ours', 'baseline (same run)', 'ratio', 'target']
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)))
  const row = (cells) => '| ' + cells.map((c, i) => c.padEnd(widths[i])).join(' | ') + ' |'
  console.log(row(head))
  console.log('|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|')
  for (const l of lines) console.log(row(l))
}

/**
 * Measure `ours` and `baseline` in alternating short slices for `ms` in total, so a change in
 * the machine's load (these hosts are shared) hits both alike; returns both rates in ops/s.
 * Each function is called as `fn()` and may return a promise; `concurrency` > 1 keeps that many
 * calls of `ours` in flight, and `baselineConcurrency` (default 1) that many of the baseline.
 */
export async function comparePair(
  ours,
  baseline,
  { ms = 3000, sliceMs = 150, concurrency = 1, baselineConcurrency = 1 } = {},
) {
  const run = async (fn, conc, duration) => {
    let n = 0
    const end = performance.now() + duration
    const worker = async () => {
      while (performance.now() < end) {
        const r = fn()
        if (r && typeof r.then === 'function') await r
        n++
      }
    }
    const start = performance.now()
    await Promise.all(Array.from({ length: conc }, worker))
    return [n, performance.now() - start]
  }
  await run(ours, concurrency, 200)
  await run(baseline, baselineConcurrency, 200)
  let oursN = 0,
    oursT = 0,
    baseN = 0,
    baseT = 0
  for (let spent = 0; spent < ms; spent += 2 * sliceMs) {
    const [a, at] = await run(ours, concurrency, sliceMs)
    const [b, bt] = await run(baseline, baselineConcurrency, sliceMs)
    oursN += a
    oursT += at
    baseN += b
    baseT += bt
  }
  return { ours: (oursN * 1000) / oursT, baseline: (baseN * 1000) / baseT }
}
