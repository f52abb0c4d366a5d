#!/usr/bin/env node
/**
 * The `agentmsg` bin. Published packages (and a built clone) run dist/cli.js. In a fresh clone
 * before `npm run build` there is no dist/ — and npm links a bin only if its file exists at
 * install time, which is why this small committed file is the bin — so it runs the TypeScript
 * sources under tsx (a dev dependency of the repository), resolving the workspace packages to
 * their sources through the `@agentmsg/source` export condition (see tsup.config.ts).
 */
import { existsSync } from 'node:fs'
import { register } from 'node:module'

const built = new URL('../dist/cli.js', import.meta.url)
if (existsSync(built)) {
  await import(built.href)
} else {
  let tsx
  try {
    tsx = await import('tsx/esm/api')
  } catch {
    process.stderr.write(
      'agentmsg: not_built: no dist/ and no tsx to run the sources — run "npm run build" in the repository\n',
    )
    process.exit(1)
  }
  tsx.register()
  // Hooks run last-registered first: this one adds the condition, then tsx resolves `.ts`.
  const addCondition =
    'export async function resolve(specifier, context, next) {' +
    " return next(specifier, { ...context, conditions: [...context.conditions, '@agentmsg/source'] }) }"
  register(`data:text/javascript,${encodeURIComponent(addCondition)}`)
  await import(new URL('../src/cli.ts', import.meta.url).href)
}
