package dev.anteroom.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The interceptor's decisions on the edge's answers as edge_decision.py words them (429
 * QueueRequired naming the room, Anteroom-Admission on a renewal), with the visitor API
 * scripted as in WalkTest; the real edge plays them in test_android_client.py.
 */
class QueueThroughTest {
    static final String QUEUE_REQUIRED = "{\"error\":\"QueueRequired\",\"message\":\"queue first\",\"room\":\"drop\","
            + "\"api\":\"http://anteroom.test/api/v1\",\"retryAfter\":5}";

    /** The app's API: answers in order, recording what each request carried. */
    static final class App implements Transport {
        final List<HttpResponse> answers = new ArrayList<>();
        final List<HttpRequest> seen = new ArrayList<>();

        App then(int status, String body, String admissionHeader) {
            Map<String, List<String>> headers = new HashMap<>();
            if (admissionHeader != null) headers.put("Anteroom-Admission", Collections.singletonList(admissionHeader));
            answers.add(new HttpResponse(status, headers, body.getBytes(StandardCharsets.UTF_8)));
            return this;
        }

        @Override
        public HttpResponse execute(HttpRequest request) {
            seen.add(request);
            return answers.remove(0);
        }
    }

    static WalkTest.Script admittedAtOnce(String token) {
        return new WalkTest.Script().then(200, WalkTest.CHALLENGE, null)
                .then(200, WalkTest.joined(WalkTest.queue("admitted", ",\"token\":\"" + token + "\"")), null);
    }

    static Transport through(App app, AnteroomClient client, boolean nonIdempotent) {
        QueueThroughInterceptor i = new QueueThroughInterceptor(client, null);
        if (nonIdempotent) i = i.retryingNonIdempotent();
        return new InterceptingTransport(app, Collections.<Interceptor>singletonList(i));
    }

    @Test
    void aGetIsQueuedThenRetriedOnceWithTheAdmissionWhichLaterCallsCarry() throws Exception {
        WalkTest.Script anteroom = admittedAtOnce("ab1.k.e30.first");
        App app = new App().then(429, QUEUE_REQUIRED, null).then(200, "{\"ok\":1}", null)
                .then(200, "{\"ok\":2}", "ab1.k.e30.renewed").then(200, "{\"ok\":3}", null);
        try (AnteroomClient client = WalkTest.client(anteroom, new WalkTest.RecordingClock(), new InMemoryStorage())) {
            Transport http = through(app, client, false);
            assertEquals(200, http.execute(HttpRequest.get("http://shop.test/api/cart")).status());
            assertEquals(2, app.seen.size());
            assertNull(app.seen.get(0).header("Anteroom-Admission"));
            assertEquals("ab1.k.e30.first", app.seen.get(1).header("Anteroom-Admission"));
            // later calls to the shop carry it from the start, and take up the edge's renewal
            assertEquals(200, http.execute(HttpRequest.get("http://shop.test/api/other")).status());
            assertEquals("ab1.k.e30.first", app.seen.get(2).header("Anteroom-Admission"));
            assertEquals(200, http.execute(HttpRequest.get("http://shop.test/api/cart")).status());
            assertEquals("ab1.k.e30.renewed", app.seen.get(3).header("Anteroom-Admission"));
            assertEquals(2, anteroom.paths.size()); // one visit for all of it
        }
    }

    @Test
    void anAdmissionTheEdgeStillRefusesIsForgottenAndTheRetryIsNotRepeated() throws Exception {
        WalkTest.Script anteroom = admittedAtOnce("ab1.k.e30.refused");
        App app = new App().then(429, QUEUE_REQUIRED, null).then(429, QUEUE_REQUIRED, null);
        try (AnteroomClient client = WalkTest.client(anteroom, new WalkTest.RecordingClock(), new InMemoryStorage())) {
            HttpResponse answer = through(app, client, false).execute(HttpRequest.get("http://shop.test/api/cart"));
            assertEquals(429, answer.status());
            assertEquals(2, app.seen.size()); // the call and its one retry
            assertNull(client.room("drop").admission());
        }
    }

    @Test
    void aPostIsNotQueuedUnlessTheAppSaysItIsSafeToRepeat() throws Exception {
        HttpRequest post = new HttpRequest("POST", "http://shop.test/api/cart",
                Collections.<String, String>emptyMap(), "[]".getBytes(StandardCharsets.UTF_8));
        WalkTest.Script none = new WalkTest.Script();
        App app = new App().then(429, QUEUE_REQUIRED, null);
        try (AnteroomClient client = WalkTest.client(none, new WalkTest.RecordingClock(), new InMemoryStorage())) {
            assertEquals(429, through(app, client, false).execute(post).status());
            assertEquals(0, none.paths.size());
        }
        WalkTest.Script anteroom = admittedAtOnce("ab1.k.e30.post");
        App again = new App().then(429, QUEUE_REQUIRED, null).then(201, "{}", null);
        try (AnteroomClient client = WalkTest.client(anteroom, new WalkTest.RecordingClock(), new InMemoryStorage())) {
            assertEquals(201, through(again, client, true).execute(post).status());
            assertEquals("ab1.k.e30.post", again.seen.get(1).header("Anteroom-Admission"));
        }
    }

    @Test
    void otherAnswersPassUntouchedAndAFailedVisitIsAnIoError() throws Exception {
        WalkTest.Script none = new WalkTest.Script();
        App app = new App().then(429, "{\"error\":\"RateLimited\",\"message\":\"slow down\"}", null)
                .then(503, "oops", null);
        try (AnteroomClient client = WalkTest.client(none, new WalkTest.RecordingClock(), new InMemoryStorage())) {
            Transport http = through(app, client, false);
            assertEquals(429, http.execute(HttpRequest.get("http://shop.test/a")).status());
            assertEquals(503, http.execute(HttpRequest.get("http://shop.test/a")).status());
            assertEquals(0, none.paths.size());
        }
        WalkTest.Script broken = new WalkTest.Script().then(401, "{\"error\":\"Unauthorized\",\"message\":\"no\"}", null);
        App queued = new App().then(429, QUEUE_REQUIRED, null);
        try (AnteroomClient client = WalkTest.client(broken, new WalkTest.RecordingClock(), new InMemoryStorage())) {
            QueueThroughInterceptor.QueueThroughException e = assertThrows(
                    QueueThroughInterceptor.QueueThroughException.class,
                    () -> through(queued, client, false).execute(HttpRequest.get("http://shop.test/a")));
            assertEquals("Unauthorized", e.anteroomError().code());
        }
    }
}
