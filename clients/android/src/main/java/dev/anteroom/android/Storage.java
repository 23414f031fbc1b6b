package dev.anteroom.android;

/**
 * Where a visit keeps what must outlive the process: its ticket, session and admission, one
 * JSON text per room. On Android, back it with {@code SharedPreferences} (see
 * docs/apps-android.md); {@link InMemoryStorage} and {@link FileStorage} are here for tests and
 * plain JVMs. Implementations must be safe to call from several threads.
 */
public interface Storage {
    /** The value kept under {@code key}, or null. */
    String get(String key);

    /** Keeps {@code value} under {@code key}, durably before returning where the store can. */
    void put(String key, String value);

    /** Forgets {@code key}. */
    void remove(String key);
}
