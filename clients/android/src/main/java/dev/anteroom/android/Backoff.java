package dev.anteroom.android;

/**
 * Retry delays, as the browser agent computes them. A transient failure (no answer, an
 * unreadable one, a 5xx) backs off exponentially with "equal jitter": the n-th failure in a row
 * (n = 0 for the first) waits {@code ceiling / 2 + random * ceiling / 2} with
 * {@code ceiling = min(60 s, 1 s * 2^n)}, so 0.5-1 s, 1-2 s, 2-4 s ... up to 30-60 s: half is always
 * waited (a line of thousands never retries at once), the other half spreads them out. A 429
 * with Retry-After waits exactly that; a Retry-After on a 5xx is a floor.
 */
public final class Backoff {
    public static final long BASE_MS = 1000;
    public static final int FACTOR = 2;
    public static final long CAP_MS = 60_000;

    private Backoff() {}

    /** The wait after {@code failures} failures in a row; {@code random} uniform in [0, 1). */
    public static long delayMs(int failures, double random) {
        double ceiling = Math.min(CAP_MS, BASE_MS * Math.pow(FACTOR, Math.max(0, failures)));
        return Math.round(ceiling / 2 + random * (ceiling / 2));
    }

    /** How long to wait before repeating the call that failed with {@code error}; -1: never. */
    public static long retryDelayMs(AnteroomException error, int failures, double random) {
        long explicit = error.retryAfterSec() >= 0 ? error.retryAfterSec() * 1000 : -1;
        if (error.status() == 429) return explicit >= 0 ? explicit : delayMs(failures, random);
        String code = error.code();
        // WrongRegion: sent to another region than the ticket's; the spot is kept there
        if ("NetworkError".equals(code) || "BadResponse".equals(code) || error.status() >= 500
                || "WrongRegion".equals(code)) {
            return Math.max(delayMs(failures, random), explicit);
        }
        return -1;
    }
}
