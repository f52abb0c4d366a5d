/**
 * A transport written outside this repository passes `testTransport` from a packed, installed
 * `@agentmsg/conformance`: the packages it needs (core, conformance, dev-tls) are built from
 * their sources with the repository's tsup options (JavaScript only: the run needs no types)
 * into staging copies, packed with `npm pack`, and installed with the example
 * (examples/dropbox-transport) into a fresh project in the system's temporary directory, where
 * the example's own test file runs under vitest. npm takes the packages' dependencies from its
 * cache when it has them; vitest is linked from this repository's.
 */
import { execFile } from 'node:child_process'
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Options } from 'tsup'
import { afterAll, expect, it } from 'vitest'
import { transportCheckNames } from '../src/transport/checks.js'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const EXAMPLE = path.join(ROOT, 'examples/dropbox-transport')
const PACKAGES = ['core', 'conformance', 'dev-tls']

let box: string | undefined
afterAll(async () => {
  if (box) await rm(box, { recursive: true, force: true })
})

/** Build `packages/<name>` into a staging copy and pack it; resolves with the tarball's path. */
async function pack(name: string, options: Options, tarballs: string): Promise<string> {
  const { build } = await import('tsup')
  const dir = path.join(ROOT, 'packages', name)
  const stage = path.join(box!, 'stage', name)
  await mkdir(stage, { recursive: true })
  for (const file of ['package.json', 'README.md'])
    await cp(path.join(dir, file), path.join(stage, file))
  // The staging copy is outside the repository, where the prepack script cannot run: copy the
  // LICENSE it would have copied, and pack without scripts.
  await cp(path.join(ROOT, 'LICENSE'), path.join(stage, 'LICENSE'))
  const entry = Object.fromEntries(
    Object.entries(options.entry as Record<string, string>).map(([k, v]) => [
      k,
      path.join(ROOT, v),
    ]),
  )
  await build({
    ...options,
    entry,
    outDir: path.join(stage, 'dist'),
    tsconfig: path.join(ROOT, 'tsconfig.base.json'),
    dts: false,
    config: false,
    silent: true,
  })
  const { stdout } = await run(
    'npm',
    ['pack', '--ignore-scripts', '--pack-destination', tarballs, stage],
    { cwd: box },
  )
  return path.join(tarballs, stdout.trim().split('\n').at(-1)!)
}

it('the example transport passes testTransport from the packed, installed package', {
  timeout: 240_000,
}, async () => {
  box = await mkdtemp(path.join(tmpdir(), 'agentmsg-outside-'))
  const tarballs = path.join(box, 'tarballs')
  await mkdir(tarballs)
  const config = (await import('../../../tsup.config.js')).default as Options[]
  const tgz: Record<string, string> = {}
  for (const name of PACKAGES) {
    const options = config.find((o) => o.name === name)
    expect(options, `tsup builds ${name}`).toBeDefined()
    tgz[name] = await pack(name, options!, tarballs)
  }

  // The example as an outside project: its package.json, with the tarballs for the packages.
  const project = path.join(box, 'project')
  for (const part of ['src', 'test'])
    await cp(path.join(EXAMPLE, part), path.join(project, part), { recursive: true })
  const manifest = JSON.parse(await readFile(path.join(EXAMPLE, 'package.json'), 'utf8'))
  manifest.dependencies['@agentmsg/core'] = `file:${tgz.core}`
  manifest.devDependencies['@agentmsg/conformance'] = `file:${tgz.conformance}`
  manifest.devDependencies['@agentmsg/dev-tls'] = `file:${tgz['dev-tls']}`
  delete manifest.devDependencies.vitest
  await writeFile(path.join(project, 'package.json'), JSON.stringify(manifest, null, 2))
  const npm = [
    '--prefer-offline',
    '--no-audit',
    '--no-fund',
    '--ignore-scripts',
    '--legacy-peer-deps',
  ]
  await run('npm', ['install', ...npm], { cwd: project })
  await symlink(
    path.join(ROOT, 'node_modules/vitest'),
    path.join(project, 'node_modules/vitest'),
    'dir',
  )

  // What was installed is the package as published: its built files, no sources.
  const installed = path.join(project, 'node_modules/@agentmsg/conformance')
  const files = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8')).files
  expect(files).toEqual(['dist', 'README.md', 'LICENSE'])
  await expect(readFile(path.join(installed, 'src/index.ts'))).rejects.toThrow()

  const report = path.join(box, 'report.json')
  const vitest = path.join(project, 'node_modules/vitest/vitest.mjs')
  const env = { ...process.env, AGENTMSG_HOME: path.join(box, 'home'), VITEST: undefined }
  await run(process.execPath, [vitest, 'run', '--reporter=json', `--outputFile=${report}`], {
    cwd: project,
    env,
  }).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`vitest failed in ${project}:\n${error.stdout}\n${error.stderr}`)
  })
  const results = JSON.parse(await readFile(report, 'utf8'))
  const names = results.testResults.flatMap(
    (f: { assertionResults: Array<{ title: string; status: string }> }) =>
      f.assertionResults.map((a) => `${a.status} ${a.title}`),
  )
  expect(names).toEqual(transportCheckNames('direct').map((name) => `passed ${name}`))
})
