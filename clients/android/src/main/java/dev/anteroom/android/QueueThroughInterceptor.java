package dev.anteroom.android;

import java.io.IOException;
import java.net.URI;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * Queue-through for the app's own API calls behind the Anteroom edge. When a call is answered
 * {@code 429} with {@code error: "QueueRequired"}, it queues in the room the answer names (the
 * whole visit, see {@link RoomQueue}), then sends the original call again, once, with the
 * admission in the {@code Anteroom-Admission} header; that retry's answer is returned whatever
 * it is (an admission the edge still refuses is forgotten, never sent again). Later calls to the
 * same origin carry the kept admission from the start, and an admission the edge renews (its
 * {@code Anteroom-Admission} answer header) replaces it.
 *
 * <p>Only idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE) are queued and repeated: a POST
 * or PATCH may already have had its effect, so its 429 is returned as it is unless the app says
 * otherwise with {@link #retryingNonIdempotent}. A visit that cannot complete (an error) is
 * thrown as {@link QueueThroughException}; a room that takes no one returns the 429.
 */
public final class QueueThroughInterceptor implements Interceptor {
    public static final String ADMISSION_HEADER = "Anteroom-Admission";
    static final Set<String> IDEMPOTENT = new HashSet<>(Arrays.asList("GET", "HEAD", "OPTIONS", "PUT", "DELETE"));

    /** A visit made for a call failed; {@link #getCause()} is the {@link AnteroomException}. */
    public static final class QueueThroughException extends IOException {
        private static final long serialVersionUID = 1L;

        QueueThroughException(AnteroomException cause) {
            super("Queueing for the call failed: " + cause.code(), cause);
        }

        public AnteroomException anteroomError() {
            return (AnteroomException) getCause();
        }
    }

    private final AnteroomClient client;
    private final QueueListener listener;
    private final Cancellation cancel;
    private final boolean nonIdempotent;
    private final Map<String, String> roomByOrigin = new ConcurrentHashMap<>();

    private QueueThroughInterceptor(AnteroomClient client, QueueListener listener, Cancellation cancel,
            boolean nonIdempotent) {
        this.client = client;
        this.listener = listener;
        this.cancel = cancel;
        this.nonIdempotent = nonIdempotent;
    }

    /** Queues for idempotent calls; the visit's updates go to {@code listener}. */
    public QueueThroughInterceptor(AnteroomClient client, QueueListener listener) {
        this(client, listener, new Cancellation(), false);
    }

    /** This interceptor, also queueing and repeating POST and PATCH (only for calls safe to repeat). */
    public QueueThroughInterceptor retryingNonIdempotent() {
        return new QueueThroughInterceptor(client, listener, cancel, true);
    }

    /** This interceptor, its visits stopped by {@code cancel}. */
    public QueueThroughInterceptor cancelledBy(Cancellation cancel) {
        return new QueueThroughInterceptor(client, listener, cancel, nonIdempotent);
    }

    @Override
    public HttpResponse intercept(Chain chain) throws IOException {
        HttpRequest original = chain.request();
        String origin = origin(original.url());
        String known = roomByOrigin.get(origin);
        HttpRequest sent = original;
        if (known != null && original.header(ADMISSION_HEADER) == null) {
            String kept = client.room(known).admission();
            if (kept != null) sent = original.withHeader(ADMISSION_HEADER, kept);
        }
        HttpResponse response = chain.proceed(sent);
        String slug = queueRequired(response);
        if (slug == null) {
            keepRenewed(response, known);
            return response;
        }
        roomByOrigin.put(origin, slug);
        RoomQueue room = client.room(slug);
        room.forgetAdmission(sent.header(ADMISSION_HEADER));
        if (!nonIdempotent && !IDEMPOTENT.contains(original.method())) return response;
        QueueUpdate outcome;
        try {
            outcome = room.awaitOutcome(listener, cancel);
        } catch (AnteroomException e) {
            throw new QueueThroughException(e);
        }
        if (outcome.state != QueueState.ADMITTED || outcome.admission == null) return response;
        HttpResponse retried = chain.proceed(original.withHeader(ADMISSION_HEADER, outcome.admission));
        if (queueRequired(retried) != null) room.forgetAdmission(outcome.admission);
        else keepRenewed(retried, slug);
        return retried;
    }

    private void keepRenewed(HttpResponse response, String slug) {
        String fresh = response.header(ADMISSION_HEADER);
        if (slug != null && fresh != null && !fresh.isEmpty()) client.room(slug).keepAdmission(fresh);
    }

    /** The room a {@code 429 QueueRequired} answer names, else null. */
    static String queueRequired(HttpResponse response) {
        if (response.status() != 429) return null;
        try {
            JSONObject body = new JSONObject(response.bodyText());
            if (!"QueueRequired".equals(body.optString("error"))) return null;
            String room = body.optString("room", null);
            return room != null && room.matches("[a-z0-9-]{3,64}") ? room : null;
        } catch (JSONException e) {
            return null;
        }
    }

    static String origin(String url) {
        try {
            URI u = new URI(url);
            return (u.getScheme() + "://" + u.getRawAuthority()).toLowerCase(Locale.ROOT);
        } catch (java.net.URISyntaxException e) {
            return url;
        }
    }
}
