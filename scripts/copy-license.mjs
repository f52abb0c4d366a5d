#!/usr/bin/env node
// npm pack and npm publish take a LICENSE only from the package's own folder: each package's
// `prepack` copies the repository's one LICENSE there (the copies are git-ignored).
import { copyFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
copyFileSync(path.join(root, 'LICENSE'), path.join(process.cwd(), 'LICENSE'))
