/**
 * TypeDoc plugin (typedoc.json `plugin`): documents every public entry of every published
 * package, as its package.json `exports` lists it, under the name users import it by.
 *
 * TypeDoc's own inference reads `exports` through the `types` condition, i.e. the built
 * `dist/*.d.ts`, and cannot map `dist/receive.d.ts` back to `src/receive-entry.ts`; each entry's
 * `@agentmsg/source` condition (tsup.config.ts) names its source directly. The packages are read
 * from `packages/*` of the working directory, so a fixture tree gets the same treatment, and
 * every exported declaration of theirs must carry a doc comment (`validation.notDocumented`),
 * as must the members of their interfaces and classes. A member of an inline object type
 * (`tls: { cert; key }`, a return type `{ messageId }`) is described by the comment of the
 * declaration whose type it is: documenting each would turn every such one-line type into a
 * block. Those are passed to TypeDoc as `intentionallyNotDocumented`, when that owner has one.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { Application, Converter, ReflectionKind as Kind } from 'typedoc'

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
    if (!reflection.kindOf(Kind.Module)) return
    const file = context
      .getSymbolFromReflection(reflection)
      ?.declarations?.[0]?.getSourceFile().fileName
    const importPath = file && byFile.get(path.normalize(file))
    if (importPath) reflection.name = importPath
  })
  app.converter.on(Converter.EVENT_RESOLVE_END, (context) => {
    const project = context.project
    const required = new Set(app.options.getValue('packagesRequiringDocumentation'))
    const covered = project
      .getReflectionsByKind(Kind.Property | Kind.Method | Kind.Accessor)
      .filter((r) => r.parent?.kindOf(Kind.TypeLiteral) && !documented(r))
      .filter((r) => required.has(project.getSymbolIdFromReflection(r)?.packageName))
      .filter((r) => ownerOf(r) && documented(ownerOf(r)))
      .map((r) => r.getFriendlyFullName())
    app.options.setValue('intentionallyNotDocumented', [...new Set(covered)])
  })
}

/** A comment on the reflection or on one of its signatures (methods, accessors). */
const documented = (r) =>
  r.hasComment() || (r.getNonIndexSignatures?.() ?? []).some((s) => s.hasComment())

/**
 * The declaration whose inline type holds `member`, past nested type literals and the
 * undocumented members holding them; none inside a parameter's type (TypeDoc never asks for
 * those, and would warn about an unused exemption).
 */
function ownerOf(member) {
  const inline = (r) => r.parent?.kindOf(Kind.TypeLiteral) && !documented(r)
  let r = member.parent
  while (r?.kindOf(Kind.TypeLiteral) || (r && inline(r))) r = r.parent
  for (let a = r; a; a = a.parent) if (a.kindOf(Kind.Parameter)) return undefined
  // A return type's literal hangs off the signature; the method or function carries the comment.
  return r?.kindOf(Kind.SomeSignature) && !r.hasComment() ? r.parent : r
}
