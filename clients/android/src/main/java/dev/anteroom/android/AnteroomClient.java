package dev.anteroom.android;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The entry point: one per waiting-room service and public key, kept for the app's lifetime.
 *
 * <pre>{@code
 * AnteroomClient client = new AnteroomClient.Builder("https://queue.example.com", "pk_live_...")
 *     .storage(new SharedPreferencesStorage(prefs))         // docs/apps-android.md
 *     .callbackExecutor(ContextCompat.getMainExecutor(context))
 *     .build();
 * RoomQueue.Visit visit = client.room("spring-drop").enter(update -> render(update));
 * }</pre>
 *
 * Java 8 language, Android API 24 and up; it uses java.*, org.json, HttpURLConnection and
 * MessageDigest only.
 */
public final class AnteroomClient implements AutoCloseable {
    private final VisitorApi api;
    private final Storage storage;
    private final Clock clock;
    private final Random random;
    private final ExecutorService executor;
    private final Executor callbackExecutor;
    private final int powThreads;
    private final String invite;
    private final Map<String, RoomQueue> rooms = new HashMap<>();

    private AnteroomClient(Builder b) {
        this.clock = b.clock;
        this.api = new VisitorApi(b.baseUrl, b.apiKey, b.transport, b.clock);
        this.storage = b.storage;
        this.random = b.random;
        this.executor = Executors.newCachedThreadPool(ProofOfWork.daemonThreads("anteroom-visit"));
        this.callbackExecutor = b.callbackExecutor;
        this.powThreads = b.powThreads;
        this.invite = b.invite;
    }

    /** The line of the room {@code slug} (the same object for the same slug). */
    public synchronized RoomQueue room(String slug) {
        if (slug == null || !slug.matches("[a-z0-9-]{3,64}")) {
            throw new IllegalArgumentException("slug must be 3 to 64 characters of a-z, 0-9 and -");
        }
        RoomQueue room = rooms.get(slug);
        if (room == null) {
            room = new RoomQueue(this, slug);
            rooms.put(slug, room);
        }
        return room;
    }

    VisitorApi api() {
        return api;
    }

    Storage storage() {
        return storage;
    }

    Clock clock() {
        return clock;
    }

    Random random() {
        return random;
    }

    ExecutorService executor() {
        return executor;
    }

    Executor callbackExecutor() {
        return callbackExecutor;
    }

    int powThreads() {
        return powThreads;
    }

    String invite() {
        return invite;
    }

    /** Ends the background threads (visits under way stop at their next wait). */
    @Override
    public void close() {
        executor.shutdownNow();
    }

    /** Settings; only the base URL and the public key are required. */
    public static final class Builder {
        private final String baseUrl;
        private final String apiKey;
        private Storage storage = new InMemoryStorage();
        private Transport transport = new UrlConnectionTransport();
        private Clock clock = Clock.SYSTEM;
        private Random random = new Random();
        private Executor callbackExecutor = new Executor() {
            @Override
            public void execute(Runnable command) {
                command.run();
            }
        };
        private int powThreads = Runtime.getRuntime().availableProcessors();
        private String invite;

        /**
         * @param baseUrl the waiting room service, e.g. https://queue.example.com (the visitor API is under /api/v1)
         * @param apiKey the environment's public key (pk_...)
         */
        public Builder(String baseUrl, String apiKey) {
            if (baseUrl == null || !baseUrl.matches("https?://.+")) {
                throw new IllegalArgumentException("baseUrl must be an absolute http(s) URL");
            }
            if (apiKey == null || !apiKey.startsWith("pk_")) {
                throw new IllegalArgumentException("apiKey must be the environment's public key (pk_...)");
            }
            this.baseUrl = baseUrl;
            this.apiKey = apiKey;
        }

        /** Where the ticket, session and admission are kept (default: in memory only). */
        public Builder storage(Storage storage) {
            this.storage = nonNull(storage, "storage");
            return this;
        }

        public Builder transport(Transport transport) {
            this.transport = nonNull(transport, "transport");
            return this;
        }

        public Builder clock(Clock clock) {
            this.clock = nonNull(clock, "clock");
            return this;
        }

        public Builder random(Random random) {
            this.random = nonNull(random, "random");
            return this;
        }

        /** Where listeners are called (default: the visit's own thread). */
        public Builder callbackExecutor(Executor executor) {
            this.callbackExecutor = nonNull(executor, "callbackExecutor");
            return this;
        }

        /** Threads for the proof of work (default: one per core, at most 8). */
        public Builder powThreads(int threads) {
            if (threads < 1) throw new IllegalArgumentException("powThreads must be at least 1");
            this.powThreads = threads;
            return this;
        }

        /** An invite (iv1...) of the room, sent when entering. */
        public Builder invite(String invite) {
            this.invite = invite;
            return this;
        }

        public AnteroomClient build() {
            return new AnteroomClient(this);
        }

        private static <T> T nonNull(T value, String name) {
            if (value == null) throw new IllegalArgumentException(name + " is required");
            return value;
        }
    }
}
