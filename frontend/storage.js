/**
 * What a browser remembers per room, shared by its tabs through localStorage under
 * `anteroom:<baseUrl>:<room>`:
 * `{sessionToken, sessionExpiresAt, queueToken}` (expiry in epoch ms, null when unknown).
 * Where localStorage is missing or refused (private modes, sandboxed frames) it lives in memory
 * for this page only.
 */

/** @typedef {{sessionToken: string | null, sessionExpiresAt: number | null, queueToken: string | null}} RoomRecord */

/** @type {Map<string, string>} */
const memory = new Map();

/**
 * @param {string} baseUrl
 * @param {string} room
 */
export function storageKey(baseUrl, room) {
  return `anteroom:${baseUrl}:${room}`;
}

/** @returns {Storage | null} localStorage if it can be used (merely reading it may throw) */
export function localStorageOrNull() {
  try {
    const storage = globalThis.localStorage;
    storage?.getItem("anteroom:probe");
    return storage ?? null;
  } catch {
    return null;
  }
}

/**
 * @param {string} baseUrl
 * @param {string} room
 */
export function createRoomStore(baseUrl, room) {
  const key = storageKey(baseUrl, room);

  /** @returns {RoomRecord} */
  function read() {
    let text = null;
    const storage = localStorageOrNull();
    try {
      text = storage ? storage.getItem(key) : memory.get(key) ?? null;
    } catch {
      text = null;
    }
    let value = {};
    try {
      value = (text && JSON.parse(text)) || {};
    } catch {
      value = {};
    }
    return {
      sessionToken: typeof value.sessionToken === "string" ? value.sessionToken : null,
      sessionExpiresAt: typeof value.sessionExpiresAt === "number" ? value.sessionExpiresAt : null,
      queueToken: typeof value.queueToken === "string" ? value.queueToken : null,
    };
  }

  /** @param {Partial<RoomRecord>} changes */
  function update(changes) {
    const text = JSON.stringify({ ...read(), ...changes });
    const storage = localStorageOrNull();
    try {
      if (storage) storage.setItem(key, text);
      else memory.set(key, text);
    } catch {
      // Quota or a storage refused mid-way: keep going without persistence.
      memory.set(key, text);
    }
  }

  function clear() {
    memory.delete(key);
    try {
      localStorageOrNull()?.removeItem(key);
    } catch {
      // Nothing to clear where nothing can be stored.
    }
  }

  return { key, read, update, clear };
}
