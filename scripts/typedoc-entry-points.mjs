/**
 * TypeDoc plugin (typedoc.json `plugin`): documents every public entry of every published
 * package, as its package.json `exports` lists it, under the name users import it by.
 *
 * TypeDoc's own inference reads `exports` through the `types` condition, i.e. the built
 * `dist/*.d.ts`, and cannot map `dist/receive.d.ts` back to `src/receive-entry.ts`; each entry's
 * `@agentmsg/source` condition (tsup.config.ts) names its source directly. The packages are read
 * from `packages/*` of the working directory, so a fixture tree gets the same treatment, and
 * every exported declaration of theirs must carry a doc comment (`validation.notDocumented`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { Application, Converter, ReflectionKind } from 'typedoc'

const SOURCE = '@agentmsg/source'

/** `{ packageName, importPath, file }` for each public entry of each non-private package under `root`. */
export function publicEntries(root) {
  const dir = path.join(root, 'packages')
  const entries = []
  for (const name of readdirSync(dir).sort()) {
    const manifest = path.join(dir, name, 'package.json')
    if (!existsSync(manifest)) continue
    const pkg = JSON.parse(readFileSync(manifest, 'utf8'))
    if (pkg.private) continue
    for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
      const source = typeof target === 'object' && target ? target[SOURCE] : undefined
      // `./package.json` and other plain files have no source condition: nothing to document.
      if (typeof source !== 'string') continue
      entries.push({
        packageName: pkg.name,
        importPath: pkg.name + subpath.slice(1),
        file: path.resolve(dir, name, source),
      })
    }
  }
  return entries
}

/** @param {Application} app */
export function load(app) {
  let byFile = new Map()
  app.on(Application.EVENT_BOOTSTRAP_END, () => {
    const entries = publicEntries(process.cwd())
    byFile = new Map(entries.map((e) => [path.normalize(e.file), e.importPath]))
    app.options.setValue(
      'entryPoints',
      entries.map((e) => e.file),
    )
    // `validation.notDocumented` checks only symbols of these packages; TypeDoc's default is the
    // root package.json's name, which here is the private workspace root, exporting nothing.
    app.options.setValue('packagesRequiringDocumentation', [
      ...new Set(entries.map((e) => e.packageName)),
    ])
  })
  // Name each entry's module by its import path (`@agentmsg/core/receive`), not by its file.
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context, reflection) => {
    if (!reflection.kindOf(ReflectionKind.Module)) return
    const file = context
      .getSymbolFromReflection(reflection)
      ?.declarations?.[0]?.getSourceFile().fileName
    const importPath = file && byFile.get(path.normalize(file))
    if (importPath) reflection.name = importPath
  })
}
