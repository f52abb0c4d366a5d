/**
 * Flag values of `agentmsg relay` read or checked beyond what `parseArgs` does: PEM files, the
 * storage size, the trusted proxies.
 */
import { readFile } from 'node:fs/promises'
import { AddressSet } from '@agentmsg/transport-https/http-kit'
import { parseSize as sizeOf } from './cli-config.js'
import { RelayCommandError, usage } from './cli-usage.js'

/** Read a PEM file named by a flag (exit 2 when it cannot be read or is not PEM). */
export async function readPem(flag: string, file: string, marker: string): Promise<string> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (e) {
    throw new RelayCommandError(
      'invalid_input',
      `${flag} ${file}: ${(e as Error).message} — pass a PEM file`,
    )
  }
  if (text.length > 1_048_576 || !text.includes(marker)) {
    throw new RelayCommandError('invalid_input', `${flag} ${file}: not a PEM file with ${marker}`)
  }
  return text
}

/** A size: an integer number of bytes, or one with a KiB, MiB or GiB suffix. */
export function parseSize(text: string): number {
  const bytes = sizeOf(text)
  if (bytes === undefined)
    throw usage(`--max-storage ${text} is not a size (bytes, KiB, MiB or GiB)`)
  return bytes
}

/**
 * `--trusted-proxies` (or the config file's `trustedProxies`; the flag wins): the load balancer
 * or proxy addresses whose `X-Forwarded-For` the per-address limits believe (PROFILE §6).
 */
export function trustedProxiesFrom(
  flag: string[] | undefined,
  file: string[] | undefined,
): string[] | undefined {
  if (flag === undefined) return file
  const list = flag
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean)
  try {
    new AddressSet(list)
  } catch (e) {
    throw usage(`--trusted-proxies: ${(e as Error).message}`)
  }
  return list
}
