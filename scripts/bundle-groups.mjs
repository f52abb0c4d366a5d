/**
 * How the chunks of a split browser bundle are loaded, for check-build.mjs (issue 12).
 *
 * With code splitting, esbuild's metafile marks every `import()` target as an entry point. The
 * page's own entry is the one nothing imports lazily; it and the chunks it imports statically
 * are what the page loads up front. Every other chunk is loaded by some `import()`.
 *
 * Lazy chunks are sorted into groups by markers (module paths their chunks hold): a group is
 * code a page loads only in some situations (the sealed box on the first seal or open, the noble
 * fallback without WebCrypto Ed25519, …). Each `import()` target belongs to the first group a
 * chunk of its static closure has a marker of; targets of no group are what the page loads in
 * normal use, and with the up-front chunks they make "all loaded".
 */

/** `start` and every output chunk they import statically, transitively. */
export function staticClosure(outputs, start) {
  const seen = new Set()
  const walk = (out) => {
    if (seen.has(out)) return
    seen.add(out)
    for (const imp of outputs[out].imports) if (imp.kind === 'import-statement') walk(imp.path)
  }
  for (const s of start) walk(s)
  return seen
}

/** Output chunks some chunk loads with import(). */
export function lazyTargets(outputs) {
  const targets = new Set()
  for (const out of Object.values(outputs)) {
    for (const imp of out.imports) if (imp.kind === 'dynamic-import') targets.add(imp.path)
  }
  return targets
}

/** The modules of `chunks` that `marker` matches. */
function marked(outputs, chunks, marker) {
  return [...chunks].flatMap((c) => Object.keys(outputs[c].inputs)).filter((i) => marker.test(i))
}

/**
 * Sort the lazy chunks of a bundle. `initial`: the up-front chunks. `groups`: `{ what, marker }`
 * in order of precedence. Returns the chunks loaded in normal use (`allLoaded`, the up-front
 * ones included), and per group the chunks it adds beyond those (`only`), the number of its
 * `import()` targets, and the modules matching its marker that are loaded up front or in normal
 * use (`misplaced`: each is an error, a group's code must stay in its own lazy chunks).
 */
export function groupLazyChunks(outputs, initial, groups) {
  const byGroup = groups.map(() => ({ targets: 0, closure: new Set() }))
  const allLoaded = new Set(initial)
  for (const target of lazyTargets(outputs)) {
    const closure = staticClosure(outputs, [target])
    const g = groups.findIndex((group) => marked(outputs, closure, group.marker).length > 0)
    if (g === -1) {
      for (const c of closure) allLoaded.add(c)
      continue
    }
    byGroup[g].targets++
    for (const c of closure) byGroup[g].closure.add(c)
  }
  return {
    allLoaded,
    groups: groups.map((group, i) => ({
      ...group,
      targets: byGroup[i].targets,
      only: new Set([...byGroup[i].closure].filter((c) => !allLoaded.has(c))),
      misplaced: [...new Set(marked(outputs, allLoaded, group.marker))],
    })),
  }
}

/**
 * Sizes of the output files `names` (`contents`: file name → bytes): minified bytes, gzip of
 * them as one stream, and as served — each file gzipped on its own, as a browser downloads a
 * split bundle (every file pays its own gzip header and starts with an empty dictionary, so
 * many small chunks cost more than their one-stream figure).
 */
export function sizesOf(contents, names, gzip) {
  const files = [...names].map((n) => contents.get(n)).filter((b) => b && b.length > 0)
  const joined = Buffer.concat(files.map((b) => Buffer.from(b)))
  return {
    min: joined.length,
    gzip: joined.length ? gzip(joined).length : 0,
    served: files.reduce((n, b) => n + gzip(b).length, 0),
    files: files.length,
  }
}
