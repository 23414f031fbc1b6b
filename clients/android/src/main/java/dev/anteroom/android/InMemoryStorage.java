package dev.anteroom.android;

import java.util.HashMap;
import java.util.Map;

/** A {@link Storage} that lives as long as the process: nothing survives a restart. */
public final class InMemoryStorage implements Storage {
    private final Map<String, String> values = new HashMap<>();

    @Override
    public synchronized String get(String key) {
        return values.get(key);
    }

    @Override
    public synchronized void put(String key, String value) {
        values.put(key, value);
    }

    @Override
    public synchronized void remove(String key) {
        values.remove(key);
    }
}
