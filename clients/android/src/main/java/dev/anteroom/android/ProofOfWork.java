package dev.anteroom.android;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The proof of work: for each puzzle, a decimal counter {@code s} (searched from 0) such that
 * SHA-256(prefix + ":" + s) starts with {@code difficulty} zero bits. The server sends the
 * puzzles' prefixes ({@code <seed>.<i>}, the seed bound to its signed challenge) and checks each
 * answer with one hash. The puzzles are solved on background threads, one per core (at most
 * {@link #MAX_THREADS}), each thread taking the next puzzle left.
 */
public final class ProofOfWork implements AutoCloseable {
    /** Threads at most, whatever the device reports. */
    public static final int MAX_THREADS = 8;
    /** Hashes between two looks at the cancellation. */
    static final int SLICE = 4096;

    /** One puzzle of a challenge. */
    public static final class Puzzle {
        public final String prefix;
        public final int difficulty;

        public Puzzle(String prefix, int difficulty) {
            if (prefix == null) throw new IllegalArgumentException("prefix is required");
            if (difficulty < 0 || difficulty > 256) {
                throw new IllegalArgumentException("difficulty must be 0 to 256 bits");
            }
            this.prefix = prefix;
            this.difficulty = difficulty;
        }
    }

    /** The solutions in order, the hashes computed and the time it took. */
    public static final class Solved {
        public final List<String> solutions;
        public final long hashes;
        public final long elapsedMs;

        Solved(List<String> solutions, long hashes, long elapsedMs) {
            this.solutions = Collections.unmodifiableList(solutions);
            this.hashes = hashes;
            this.elapsedMs = elapsedMs;
        }
    }

    private final ExecutorService pool;
    private final int threads;

    /** A solver on {@code threads} background threads (clamped to 1..MAX_THREADS). */
    public ProofOfWork(int threads) {
        this.threads = Math.max(1, Math.min(MAX_THREADS, threads));
        this.pool = Executors.newFixedThreadPool(this.threads, daemonThreads("anteroom-pow"));
    }

    /** A solver with one thread per core the runtime reports. */
    public ProofOfWork() {
        this(Runtime.getRuntime().availableProcessors());
    }

    public int threads() {
        return threads;
    }

    /** Solves every puzzle; blocks the calling thread (never call it on Android's main thread). */
    public Solved solve(final List<Puzzle> puzzles, final Cancellation cancel) {
        if (puzzles == null || puzzles.isEmpty()) throw new IllegalArgumentException("no puzzles");
        final String[] found = new String[puzzles.size()];
        final AtomicInteger next = new AtomicInteger();
        long started = System.nanoTime();
        List<Future<?>> running = new ArrayList<>();
        int workers = Math.min(threads, puzzles.size());
        for (int w = 0; w < workers; w++) {
            running.add(pool.submit(new Runnable() {
                @Override
                public void run() {
                    for (int i = next.getAndIncrement(); i < puzzles.size(); i = next.getAndIncrement()) {
                        Puzzle p = puzzles.get(i);
                        found[i] = Long.toString(search(p.prefix, p.difficulty, cancel));
                    }
                }
            }));
        }
        try {
            for (Future<?> f : running) f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CancellationException("interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof CancellationException) throw (CancellationException) e.getCause();
            throw new IllegalStateException("the proof of work failed", e.getCause());
        }
        long hashes = 0;
        List<String> solutions = new ArrayList<>();
        for (String s : found) {
            solutions.add(s);
            hashes += Long.parseLong(s) + 1;
        }
        return new Solved(solutions, hashes, (System.nanoTime() - started) / 1_000_000L);
    }

    /**
     * Solves an arrival's challenge fitted to this device: the first {@code minPuzzles} (the
     * floor of the work) are solved and timed, which measures the device; then as many more, in
     * order, as keep the whole solve's p95 within {@code fitMs}. The server accepts any count
     * from minPuzzles to all.
     */
    public List<String> solveFitted(JSONObject challenge, Cancellation cancel) throws JSONException {
        List<Puzzle> puzzles = puzzlesOf(challenge);
        int all = puzzles.size();
        int least = Math.min(all, Math.max(1, challenge.optInt("minPuzzles", all)));
        Solved first = solve(puzzles.subList(0, least), cancel);
        if (least >= all) return first.solutions;
        int count = fittedCount(first.hashes, first.elapsedMs, all, least,
                challenge.optLong("fitMs", 600), puzzles.get(0).difficulty);
        if (count == least) return first.solutions;
        List<String> out = new ArrayList<>(first.solutions);
        out.addAll(solve(puzzles.subList(least, count), cancel).solutions);
        return out;
    }

    /** How many puzzles to solve in all, from the rate the first {@code least} were solved at. */
    static int fittedCount(long hashes, long elapsedMs, int all, int least, long fitMs, int difficulty) {
        double rate = hashes * 1000.0 / Math.max(1, elapsedMs);
        double tail = 1 + 2 / Math.sqrt(all);
        double fits = Math.floor(rate * (fitMs > 0 ? fitMs : 600) / 1000.0 / tail / Math.pow(2, difficulty));
        return (int) Math.min(all, Math.max(least, fits));
    }

    /** The puzzles of a challenge answer; a malformed one throws JSONException. */
    static List<Puzzle> puzzlesOf(JSONObject challenge) throws JSONException {
        JSONArray raw = challenge.getJSONArray("puzzles");
        if (raw.length() == 0) throw new JSONException("no puzzles");
        List<Puzzle> puzzles = new ArrayList<>();
        for (int i = 0; i < raw.length(); i++) {
            JSONObject p = raw.getJSONObject(i);
            int difficulty = p.getInt("difficulty");
            if (difficulty < 0 || difficulty > 64) throw new JSONException("unusable difficulty");
            puzzles.add(new Puzzle(p.getString("prefix"), difficulty));
        }
        return puzzles;
    }

    /**
     * The least counter from 0 whose hash meets {@code difficulty}. The message is kept in one
     * byte array and its decimal counter incremented in place, so a hash costs one SHA-256 and
     * no allocation.
     */
    public static long search(String prefix, int difficulty, Cancellation cancel) {
        MessageDigest sha = sha256();
        byte[] head = (prefix + ":").getBytes(StandardCharsets.UTF_8);
        byte[] buf = new byte[head.length + 20];
        System.arraycopy(head, 0, buf, 0, head.length);
        int start = head.length;
        int len = start + 1; // the counter's digits are buf[start..len)
        buf[start] = '0';
        byte[] digest = new byte[32];
        for (long counter = 0;; counter++) {
            if ((counter & (SLICE - 1)) == 0 && cancel != null) cancel.throwIfCancelled();
            sha.update(buf, 0, len);
            try {
                sha.digest(digest, 0, 32);
            } catch (java.security.DigestException e) {
                throw new IllegalStateException(e);
            }
            if (meets(digest, difficulty)) return counter;
            // counter + 1, in decimal, in place
            int i = len - 1;
            while (i >= start && buf[i] == '9') buf[i--] = '0';
            if (i >= start) {
                buf[i]++;
            } else {
                System.arraycopy(buf, start, buf, start + 1, len - start);
                buf[start] = '1';
                len++;
            }
        }
    }

    /** True when SHA-256(prefix + ":" + solution) starts with {@code difficulty} zero bits. */
    public static boolean check(String prefix, String solution, int difficulty) {
        byte[] digest = sha256().digest((prefix + ":" + solution).getBytes(StandardCharsets.UTF_8));
        return meets(digest, difficulty);
    }

    /** True when {@code digest} starts with {@code difficulty} zero bits. */
    static boolean meets(byte[] digest, int difficulty) {
        int full = difficulty >>> 3;
        for (int i = 0; i < full; i++) if (digest[i] != 0) return false;
        int rest = difficulty & 7;
        return rest == 0 || ((digest[full] & 0xff) >>> (8 - rest)) == 0;
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing", e);
        }
    }

    static ThreadFactory daemonThreads(final String name) {
        final AtomicInteger count = new AtomicInteger();
        return new ThreadFactory() {
            @Override
            public Thread newThread(Runnable r) {
                Thread t = new Thread(r, name + "-" + count.incrementAndGet());
                t.setDaemon(true);
                return t;
            }
        };
    }

    /** Ends the threads (a search still running stops at its next look at the cancellation). */
    @Override
    public void close() {
        pool.shutdownNow();
    }
}
