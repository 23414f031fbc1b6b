package dev.anteroom.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class BackoffTest {
    static AnteroomException failure(String code, int status, long retryAfter) {
        return new AnteroomException(code, status, "x", retryAfter, null, null);
    }

    @Test
    void transientFailuresBackOffExponentiallyWithHalfTheCeilingAlwaysWaited() {
        assertEquals(500, Backoff.delayMs(0, 0.0));
        assertEquals(1000, Backoff.delayMs(0, 1.0));
        assertEquals(1000, Backoff.delayMs(1, 0.0));
        assertEquals(4000, Backoff.delayMs(3, 0.0));
        assertEquals(6000, Backoff.delayMs(3, 0.5));
        assertEquals(30_000, Backoff.delayMs(10, 0.0)); // capped at 60 s
        assertEquals(60_000, Backoff.delayMs(30, 1.0));
        java.util.Random random = new java.util.Random(7);
        for (int n = 0; n < 12; n++) {
            long d = Backoff.delayMs(n, random.nextDouble());
            long ceiling = Math.min(60_000, 1000L << n);
            assertTrue(d >= ceiling / 2 && d <= ceiling, n + ": " + d);
        }
    }

    @Test
    void jitterSpreadsALineThatFailedTogether() {
        java.util.Set<Long> delays = new java.util.HashSet<>();
        java.util.Random random = new java.util.Random(1);
        for (int i = 0; i < 100; i++) delays.add(Backoff.delayMs(4, random.nextDouble()));
        assertTrue(delays.size() > 50, "only " + delays.size() + " distinct delays");
    }

    @Test
    void aRetryAfterOn429IsWaitedExactlyAndOn5xxIsAFloor() {
        assertEquals(7000, Backoff.retryDelayMs(failure("RateLimited", 429, 7), 5, 0.9));
        assertEquals(500, Backoff.retryDelayMs(failure("Busy", 429, -1), 0, 0.0));
        assertEquals(9000, Backoff.retryDelayMs(failure("Unavailable", 503, 9), 0, 1.0));
        assertEquals(4000, Backoff.retryDelayMs(failure("Unavailable", 503, 1), 3, 0.0));
        assertEquals(500, Backoff.retryDelayMs(failure("NetworkError", 0, -1), 0, 0.0));
        assertEquals(500, Backoff.retryDelayMs(failure("BadResponse", 200, -1), 0, 0.0));
    }

    @Test
    void refusalsAreNeverRepeated() {
        assertEquals(-1, Backoff.retryDelayMs(failure("TicketGone", 410, -1), 0, 0.5));
        assertEquals(-1, Backoff.retryDelayMs(failure("BadRequest", 400, -1), 0, 0.5));
        assertEquals(-1, Backoff.retryDelayMs(failure("RoomClosed", 403, 5), 0, 0.5));
    }

    @Test
    void retryAfterIsReadAsSecondsOrAnHttpDate() {
        assertEquals(3, VisitorApi.parseRetryAfter("3", 0));
        assertEquals(2, VisitorApi.parseRetryAfter(" 1.2 ", 0));
        assertEquals(-1, VisitorApi.parseRetryAfter("soon", 0));
        assertEquals(-1, VisitorApi.parseRetryAfter(null, 0));
        // Sun, 06 Nov 1994 08:49:37 GMT is 784111777 s after the epoch
        assertEquals(10, VisitorApi.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111767_000L));
        assertEquals(0, VisitorApi.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111800_000L));
    }
}
