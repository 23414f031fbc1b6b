package dev.anteroom.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/**
 * The walk's decisions on scripted answers (the visitor API's own shapes, with difficulty-0
 * puzzles) and a clock that records every wait instead of waiting: what is waited, what is
 * called next, what is kept. The live server plays the same journeys in
 * tests/integration/test_android_client.py.
 */
class WalkTest {
    /** A clock whose waits move it at once, and are recorded. */
    static class RecordingClock implements Clock {
        long now = 1_000_000;
        final List<Long> waits = new ArrayList<>();

        @Override
        public long nowMs() {
            return now;
        }

        @Override
        public void sleep(long ms, Cancellation cancel) {
            cancel.throwIfCancelled();
            waits.add(ms);
            now += ms;
        }
    }

    /** Answers each POST with the next scripted answer and records the path and body. */
    static final class Script implements Transport {
        final Deque<HttpResponse> answers = new ArrayDeque<>();
        final List<String> paths = new ArrayList<>();
        final List<JSONObject> bodies = new ArrayList<>();

        Script then(int status, String json, String retryAfter) {
            Map<String, List<String>> headers = new HashMap<>();
            if (retryAfter != null) headers.put("Retry-After", Collections.singletonList(retryAfter));
            answers.add(new HttpResponse(status, headers, json.getBytes(StandardCharsets.UTF_8)));
            return this;
        }

        @Override
        public HttpResponse execute(HttpRequest request) {
            paths.add(request.url().replace("http://anteroom.test", ""));
            try {
                bodies.add(new JSONObject(new String(request.body(), StandardCharsets.UTF_8)));
            } catch (org.json.JSONException e) {
                throw new AssertionError(e);
            }
            if (answers.isEmpty()) throw new AssertionError("unscripted call to " + request.url());
            return answers.poll();
        }
    }

    static final String CHALLENGE = "{\"challenge\":\"pc1.k.p.s\",\"difficulty\":0,\"puzzles\":[{\"prefix\":\"s.0\",\"difficulty\":0},"
            + "{\"prefix\":\"s.1\",\"difficulty\":0}],\"expectedHashes\":2,\"tier\":\"low\",\"expiresAt\":1,"
            + "\"minPuzzles\":1,\"fitMs\":600}";

    static String queue(String status, String extra) {
        return "{\"status\":\"" + status + "\",\"room\":\"drop\",\"roomName\":\"Drop\",\"redirectUrl\":\"https://x\","
                + "\"roomStatus\":\"open\"" + extra + "}";
    }

    static String joined(String queue) {
        return "{\"session\":{\"sessionToken\":\"st1.k.e30.s\",\"expiresAt\":99000000000,\"score\":0,\"sig\":[]},"
                + "\"queue\":" + queue + "}";
    }

    static String error(String code) {
        return "{\"error\":\"" + code + "\",\"message\":\"m\"}";
    }

    static AnteroomClient client(Script script, RecordingClock clock, Storage storage) {
        return new AnteroomClient.Builder("http://anteroom.test", "pk_test").transport(script).clock(clock)
                .storage(storage).random(new Random(3)).powThreads(2).build();
    }

    @Test
    void aVisitWaitsAsToldEntersAgainAfter410AndKeepsItsAdmission() throws Exception {
        String waiting = queue("waiting", ",\"position\":3,\"etaSeconds\":9,\"pollAfterMs\":1500,\"queueToken\":\"qt1.a\"");
        Script script = new Script()
                .then(429, error("RateLimited"), "7")                  // arrive: wait exactly 7 s
                .then(200, CHALLENGE, null)
                .then(200, joined(waiting), "2")                        // join: waiting, poll in 1.5 s
                .then(503, error("Unavailable"), null)                  // poll: back off
                .then(410, error("TicketGone"), null)                   // poll: the spot is gone
                .then(200, queue("waiting", ",\"position\":5,\"pollAfterMs\":2000,\"queueToken\":\"qt1.b\""), null)
                .then(200, queue("admitted", ",\"token\":\"ab1.k.e30.s\",\"queueToken\":\"qt1.c\""), null);
        RecordingClock clock = new RecordingClock();
        Storage storage = new InMemoryStorage();
        List<String> seen = new ArrayList<>();
        try (AnteroomClient c = client(script, clock, storage)) {
            QueueUpdate outcome = c.room("drop").awaitOutcome(u -> seen.add(u.state.wireName()
                    + (u.position != null ? ":" + u.position : "") + (u.code != null ? ":" + u.code : "")),
                    new Cancellation());
            assertEquals(QueueState.ADMITTED, outcome.state);
            assertEquals("ab1.k.e30.s", outcome.admission);
            assertEquals("ab1.k.e30.s", c.room("drop").admission());
            assertEquals(java.util.Arrays.asList("/api/v1/arrive", "/api/v1/arrive", "/api/v1/queue/join",
                    "/api/v1/queue/poll", "/api/v1/queue/poll", "/api/v1/queue/enter", "/api/v1/queue/poll"),
                    script.paths);
            // the poll after the 503 repeats the same ticket; the enter after the 410 uses the session
            assertEquals("qt1.a", script.bodies.get(3).getString("ticket"));
            assertEquals("qt1.a", script.bodies.get(4).getString("ticket"));
            assertEquals("st1.k.e30.s", script.bodies.get(5).getString("sessionToken"));
            assertEquals("qt1.b", script.bodies.get(6).getString("ticket"));
            assertEquals("pk_test", script.bodies.get(0).getString("apiKey"));
            // waits: 7 s as told, 1.5 s poll, a jittered 0.5-1 s backoff, then 2 s poll
            assertEquals(4, clock.waits.size(), clock.waits.toString());
            assertEquals(7000L, (long) clock.waits.get(0));
            assertEquals(1500L, (long) clock.waits.get(1));
            assertTrue(clock.waits.get(2) >= 500 && clock.waits.get(2) <= 1000, clock.waits.toString());
            assertEquals(2000L, (long) clock.waits.get(3));
            assertEquals(java.util.Arrays.asList("entering", "retrying:RateLimited", "waiting:3",
                    "retrying:Unavailable", "entering", "waiting:5", "admitted"), seen);
            VisitRecord kept = VisitRecord.read(storage, c.room("drop").storageKey());
            assertNull(kept.queueToken); // admitted: the ticket is done with
        }
    }

    @Test
    void aKeptTicketIsPolledNotQueuedAgain() throws Exception {
        Storage storage = new InMemoryStorage();
        Script script = new Script().then(200, queue("admitted", ",\"token\":\"ab1.k.e30.s\""), null);
        try (AnteroomClient c = client(script, new RecordingClock(), storage)) {
            VisitRecord r = new VisitRecord();
            r.queueToken = "qt1.kept";
            r.sessionToken = "st1.kept";
            r.write(storage, c.room("drop").storageKey());
            assertEquals(QueueState.ADMITTED, c.room("drop").awaitOutcome(null, new Cancellation()).state);
            assertEquals(Collections.singletonList("/api/v1/queue/poll"), script.paths);
            assertEquals("qt1.kept", script.bodies.get(0).getString("ticket"));
            // the admission is kept: asking again makes no call
            assertEquals(QueueState.ADMITTED, c.room("drop").awaitOutcome(null, new Cancellation()).state);
            assertEquals(1, script.paths.size());
        }
    }

    @Test
    void aClosedRoomOrARefusedVisitorEndsTheVisitAsClosed() throws Exception {
        Script closed = new Script().then(403,
                "{\"error\":\"RoomClosed\",\"message\":\"closed\",\"closedMessage\":\"Back at noon\"}", null);
        try (AnteroomClient c = client(closed, new RecordingClock(), new InMemoryStorage())) {
            QueueUpdate outcome = c.room("drop").awaitOutcome(null, new Cancellation());
            assertEquals(QueueState.CLOSED, outcome.state);
            assertEquals("Back at noon", outcome.closedMessage);
        }
        Script denied = new Script().then(200, CHALLENGE, null).then(403, error("QueueDenied"), null);
        List<QueueState> seen = new ArrayList<>();
        try (AnteroomClient c = client(denied, new RecordingClock(), new InMemoryStorage())) {
            QueueUpdate outcome = c.room("drop").awaitOutcome(u -> seen.add(u.state), new Cancellation());
            assertEquals(QueueState.CLOSED, outcome.state);
            assertEquals("QueueDenied", outcome.code);
            assertEquals(QueueState.CLOSED, seen.get(seen.size() - 1));
            assertEquals(2, denied.paths.size()); // no further calls
        }
    }

    @Test
    void aRefusedProofIsAnsweredWithANewArrivalAFewTimesOnly() throws Exception {
        String refused = "{\"error\":\"BadRequest\",\"message\":\"m\",\"fields\":{\"solutions\":\"does not solve the challenge\"}}";
        Script script = new Script();
        for (int i = 0; i < 5; i++) script.then(200, CHALLENGE, null).then(400, refused, null);
        try (AnteroomClient c = client(script, new RecordingClock(), new InMemoryStorage())) {
            AnteroomException e = assertThrows(AnteroomException.class,
                    () -> c.room("drop").awaitOutcome(null, new Cancellation()));
            assertEquals("BadRequest", e.code());
            assertEquals(2 * (RoomQueue.MAX_RECOVERIES + 1), script.paths.size());
        }
    }

    @Test
    void aCancelledVisitStopsAtItsNextWait() throws Exception {
        Script script = new Script().then(503, error("Unavailable"), null);
        Cancellation cancel = new Cancellation();
        RecordingClock clock = new RecordingClock() {
            @Override
            public void sleep(long ms, Cancellation c) {
                cancel.cancel(); // the app leaves the screen during the backoff
                super.sleep(ms, c);
            }
        };
        try (AnteroomClient c = client(script, clock, new InMemoryStorage())) {
            assertThrows(java.util.concurrent.CancellationException.class,
                    () -> c.room("drop").awaitOutcome(null, cancel));
            assertEquals(1, script.paths.size());
        }
    }
}
