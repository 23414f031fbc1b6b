package dev.anteroom.android;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * A {@link Storage} in one JSON file, for plain JVMs (and an app that prefers a file of its
 * own). Each write goes to a temporary file that is synced and then renamed over the old one,
 * so a process killed mid-write leaves the previous state, never half a file. An unreadable file
 * reads as empty (a visit then enters again rather than failing).
 */
public final class FileStorage implements Storage {
    private final File file;

    public FileStorage(File file) {
        this.file = file;
    }

    @Override
    public synchronized String get(String key) {
        JSONObject all = read();
        return all.has(key) ? all.optString(key, null) : null;
    }

    @Override
    public synchronized void put(String key, String value) {
        JSONObject all = read();
        try {
            all.put(key, value);
        } catch (JSONException e) {
            throw new IllegalArgumentException(e);
        }
        write(all);
    }

    @Override
    public synchronized void remove(String key) {
        JSONObject all = read();
        if (all.remove(key) != null) write(all);
    }

    private JSONObject read() {
        if (!file.exists()) return new JSONObject();
        try (InputStream in = new FileInputStream(file)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[4096];
            for (int n; (n = in.read(buf)) > 0;) out.write(buf, 0, n);
            return new JSONObject(new String(out.toByteArray(), StandardCharsets.UTF_8));
        } catch (IOException | JSONException e) {
            return new JSONObject();
        }
    }

    private void write(JSONObject all) {
        File dir = file.getAbsoluteFile().getParentFile();
        if (dir != null && !dir.isDirectory() && !dir.mkdirs()) {
            throw new IllegalStateException("cannot create " + dir);
        }
        File temp = new File(dir, file.getName() + ".tmp");
        try (FileOutputStream out = new FileOutputStream(temp)) {
            out.write(all.toString().getBytes(StandardCharsets.UTF_8));
            out.getFD().sync();
        } catch (IOException e) {
            throw new IllegalStateException("cannot write " + temp, e);
        }
        if (!temp.renameTo(file)) throw new IllegalStateException("cannot replace " + file);
    }

    /** The keys kept (for tests and clean-up). */
    public synchronized Iterator<String> keys() {
        return read().keys();
    }
}
