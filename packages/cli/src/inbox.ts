export async function runInbox(_values: Record<string, unknown>): Promise<number> {
  throw new Error('inbox: not wired yet')
}
