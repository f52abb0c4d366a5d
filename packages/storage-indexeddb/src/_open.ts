/**
 * Open `dbName` with `storeName` in it (upgrading the database to add it). `onLost` runs when the
 * connection goes: closed by the browser, or by us at once on `versionchange` (never blocking).
 */
export async function openStore(
  factory: IDBFactory,
  dbName: string,
  storeName: string,
  onLost: () => void,
): Promise<IDBDatabase> {
  // Retried because two connections may race to add stores: the loser's `open(name, v + 1)`
  // fails with VersionError, and it tries again from the newer version.
  for (let attempt = 0; ; attempt++) {
    let db = await open(factory, dbName, storeName)
    if (!db.objectStoreNames.contains(storeName)) {
      const version = db.version + 1
      db.close()
      try {
        db = await open(factory, dbName, storeName, version)
      } catch (err) {
        if (attempt < 5 && (err as { name?: string })?.name === 'VersionError') continue
        throw err
      }
    }
    const lost = (): void => {
      db.close()
      onLost()
    }
    db.onversionchange = lost
    db.onclose = lost
    return db
  }
}

function open(factory: IDBFactory, dbName: string, storeName: string, version?: number) {
  return new Promise<IDBDatabase>((resolve, reject) => {
    const request = version === undefined ? factory.open(dbName) : factory.open(dbName, version)
    request.onupgradeneeded = () => {
      const db = request.result
      if (!db.objectStoreNames.contains(storeName)) db.createObjectStore(storeName)
    }
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
    // `blocked`: another connection has not closed for our upgrade yet. Keep waiting; ours
    // close on `versionchange`, and IndexedDB proceeds once the others have.
  })
}
