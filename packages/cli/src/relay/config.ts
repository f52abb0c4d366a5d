/** `agentmsg relay --config FILE`: every unknown key and bad value is one problem. */
import { MAX_SMALL_FILE_BYTES, readJsonFile } from '../command.js'
import { check, SETTINGS, type Setting } from './settings.js'

/** A config file that cannot be used: one problem per line, `<path>: <what is wrong>`. */
export class RelayConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: ${problems.join('; ')}`)
  }
}

/** Set the dotted `path` of `target`. */
export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.')
  const last = keys.pop()!
  let at = target
  for (const key of keys) at = (at[key] ??= {}) as Record<string, unknown>
  at[last] = value
}

type Node = { [key: string]: Node | Setting }
/** The file's keys as a tree. */
const FILE: Node = {}
for (const s of SETTINGS) if (s.key) setPath(FILE, s.key, s)

/** Check `value` against `node`: one problem per bad key, the values set into `out`. */
function walk(value: unknown, node: Node, path: string, problems: string[], out: object): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(path ? `${path}: must be a JSON object` : 'must be a JSON object')
    return
  }
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key
    const rule = Object.hasOwn(node, key) ? node[key] : undefined
    if (rule === undefined) {
      problems.push(`${at}: unknown key (expected one of ${Object.keys(node).join(', ')})`)
    } else if (typeof rule.kind === 'object') {
      const s = rule as Setting
      const parsed = check(s.kind!, item)
      if ('problem' in parsed) problems.push(`${at}: ${parsed.problem}`)
      else setPath(out as Record<string, unknown>, s.to ?? s.key!, parsed.value)
    } else {
      walk(item, rule as Node, at, problems, out)
    }
  }
}

/** What a config file sets (serveRelay options); throws {@link RelayConfigError}. */
export function relayConfigFrom(file: string, json: unknown): Record<string, unknown> {
  const problems: string[] = []
  const config = {}
  walk(json, FILE, '', problems, config)
  if (problems.length > 0) throw new RelayConfigError(file, problems)
  return config
}

/** Read and check a config file (JSON, at most 64 KiB; exit 2 when it cannot be used). */
export async function loadRelayConfig(file: string): Promise<Record<string, unknown>> {
  return relayConfigFrom(file, await readJsonFile(`--config ${file}`, file, MAX_SMALL_FILE_BYTES))
}
