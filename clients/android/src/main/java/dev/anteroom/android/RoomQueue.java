package dev.anteroom.android;

import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.Future;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * One room's line, as a visitor walks it: arrive (a challenge), solve it on the device, join
 * (session and place at once), then poll at the pace the server asks until admitted. What holds
 * the place (ticket, session, admission) is kept in the client's {@link Storage} after every
 * answer, so a visit started again after the process was killed polls the same place instead of
 * queueing afresh. Visits of one room run one at a time: a second caller waits for the first
 * and then finds its admission.
 */
public final class RoomQueue {
    /** A session this close to its expiry is replaced on entering rather than refused. */
    static final long SESSION_MARGIN_MS = 30_000;
    /** An admission this close to its expiry is not handed out any more. */
    static final long ADMISSION_MARGIN_MS = 5_000;
    /** Used when an answer says nothing of when to poll; the floor guards against a hot loop. */
    static final long DEFAULT_POLL_MS = 5_000;
    static final long MIN_POLL_MS = 250;
    /** Recoveries (enter again, identify again) in a row without a good answer before giving up. */
    static final int MAX_RECOVERIES = 3;
    /**
     * Refusals that close the line to this visitor for good (the room takes no entries, this
     * session may not enter, it was revoked): the visit ends CLOSED with the code, not ERROR.
     */
    static final java.util.Set<String> CLOSED_TO_VISITOR = new java.util.HashSet<>(
            java.util.Arrays.asList("RoomClosed", "QueueDenied", "SessionRevoked"));

    private final AnteroomClient client;
    private final String slug;
    private final String key;
    private final Object walking = new Object();

    RoomQueue(AnteroomClient client, String slug) {
        this.client = client;
        this.slug = slug;
        this.key = "anteroom:" + client.api().baseUrl() + ":" + client.api().apiKey() + ":" + slug;
    }

    public String slug() {
        return slug;
    }

    /** Starts a visit on the client's executor; its updates go to {@code listener}. */
    public Visit enter(final QueueListener listener) {
        final Cancellation cancel = new Cancellation();
        Future<QueueUpdate> future = client.executor().submit(new Callable<QueueUpdate>() {
            @Override
            public QueueUpdate call() throws Exception {
                return awaitOutcome(listener, cancel);
            }
        });
        return new Visit(future, cancel);
    }

    /**
     * Walks the line on the calling thread (never Android's main thread) until admitted
     * ({@link QueueState#ADMITTED}, the admission kept for {@link #admission()}) or the room
     * takes no one ({@link QueueState#CLOSED}). Transient failures are waited out (RETRYING);
     * anything else ends the visit with an ERROR update and the exception.
     */
    public QueueUpdate awaitOutcome(QueueListener listener, Cancellation cancel) throws AnteroomException {
        synchronized (walking) {
            return walk(new Emitter(client, listener), cancel);
        }
    }

    /** The admission kept for this room, if still usable; else null. */
    public String admission() {
        VisitRecord r = VisitRecord.read(client.storage(), key);
        return r.admissionLive(client.clock().nowMs(), ADMISSION_MARGIN_MS) ? r.admission : null;
    }

    /** Keeps a renewed admission (the edge's {@code Anteroom-Admission} answer header). */
    public void keepAdmission(String token) {
        VisitRecord r = VisitRecord.read(client.storage(), key);
        r.admission = token;
        r.admissionExpiresAt = Tokens.expiresAtMs(token);
        r.write(client.storage(), key);
    }

    /** Forgets {@code token} (refused by the edge), so it is never sent again. */
    public void forgetAdmission(String token) {
        VisitRecord r = VisitRecord.read(client.storage(), key);
        if (token != null && token.equals(r.admission)) {
            r.admission = null;
            r.admissionExpiresAt = -1;
            r.write(client.storage(), key);
        }
    }

    /** Gives up the place in line (if any) and forgets it. */
    public void leave() throws AnteroomException {
        VisitRecord r = VisitRecord.read(client.storage(), key);
        if (r.queueToken != null) {
            client.api().post(VisitorApi.LEAVE, fields("ticket", r.queueToken));
            r.queueToken = null;
            r.write(client.storage(), key);
        }
    }

    /** Renews the kept admission at the server; returns the fresh one (also kept). */
    public String refreshAdmission() throws AnteroomException {
        String token = admission();
        if (token == null) throw new AnteroomException("NoAdmission", 0, "No admission is kept for this room.");
        try {
            JSONObject answer = client.api().post(VisitorApi.REFRESH, fields("token", token)).body;
            String fresh = answer.opt("token") instanceof String ? answer.optString("token") : null;
            if (fresh == null) throw new AnteroomException("BadResponse", 200, "The refresh sent no admission.");
            keepAdmission(fresh);
            return fresh;
        } catch (AnteroomException e) {
            if (e.status() == 401 || e.status() == 403) forgetAdmission(token);
            throw e;
        }
    }

    /** Forgets everything kept for this room (ticket, session, admission). */
    public void reset() {
        client.storage().remove(key);
    }

    /** The key this room's state is kept under. */
    public String storageKey() {
        return key;
    }

    // -- the walk ------------------------------------------------------------------------------

    private QueueUpdate walk(Emitter emit, Cancellation cancel) throws AnteroomException {
        Clock clock = client.clock();
        int recoveries = 0;
        for (;;) {
            cancel.throwIfCancelled();
            VisitRecord record = VisitRecord.read(client.storage(), key);
            if (record.admissionLive(clock.nowMs(), ADMISSION_MARGIN_MS)) {
                QueueUpdate done = QueueUpdate.admitted(record.admission, null);
                emit.update(done);
                return done;
            }
            VisitorApi.Answer answer;
            try {
                if (record.queueToken != null) {
                    answer = retrying(VisitorApi.POLL, fields("ticket", record.queueToken), emit, cancel);
                } else if (record.sessionLive(clock.nowMs(), SESSION_MARGIN_MS)) {
                    emit.update(QueueUpdate.of(QueueState.ENTERING));
                    JSONObject body = fields("room", slug, "sessionToken", record.sessionToken);
                    if (client.invite() != null) put(body, "invite", client.invite());
                    answer = retrying(VisitorApi.ENTER, body, emit, cancel);
                } else {
                    answer = arrive(record.sessionToken, emit, cancel);
                }
            } catch (AnteroomException e) {
                if (++recoveries <= MAX_RECOVERIES && recover(record, e)) continue;
                if (CLOSED_TO_VISITOR.contains(e.code())) {
                    if ("SessionRevoked".equals(e.code())) reset();
                    QueueUpdate closed = new QueueUpdate(QueueState.CLOSED, null, null, null, null, null, null, null, null,
                            e.closedMessage(), e.code(), e.getMessage(), null);
                    emit.update(closed);
                    return closed;
                }
                emit.update(QueueUpdate.failure(QueueState.ERROR, e, null));
                throw e;
            }
            recoveries = 0;
            QueueUpdate update = QueueUpdate.fromAnswer(answer.body);
            VisitRecord fresh = VisitRecord.read(client.storage(), key);
            if (update.state == QueueState.ADMITTED || update.state == QueueState.CLOSED) {
                fresh.queueToken = null;
                if (update.admission != null) {
                    fresh.admission = update.admission;
                    fresh.admissionExpiresAt = Tokens.expiresAtMs(update.admission);
                }
            } else if (answer.body.opt("queueToken") instanceof String) {
                fresh.queueToken = answer.body.optString("queueToken");
            }
            fresh.write(client.storage(), key);
            emit.update(update);
            if (update.state == QueueState.ADMITTED || update.state == QueueState.CLOSED) return update;
            clock.sleep(pollDelayMs(answer), cancel);
        }
    }

    /**
     * Whether the failure is one a fresh start cures, having made that start (forgetting what
     * failed): a ticket gone or no longer valid → enter again with the session; a session
     * expired or invalid → arrive again (an expired one still names the visitor); a proof refused
     * or a challenge spent → arrive again.
     */
    private boolean recover(VisitRecord record, AnteroomException e) {
        VisitRecord r = VisitRecord.read(client.storage(), key);
        if (record.queueToken != null && ("TicketGone".equals(e.code()) || "TokenInvalid".equals(e.code())
                || "TokenExpired".equals(e.code()))) {
            r.queueToken = null;
        } else if (record.queueToken == null && record.sessionLive(client.clock().nowMs(), SESSION_MARGIN_MS)
                && ("TokenExpired".equals(e.code()) || "TokenInvalid".equals(e.code()))) {
            if ("TokenExpired".equals(e.code())) r.sessionExpiresAt = 0;
            else r.sessionToken = null;
        } else if (record.queueToken == null && ("TokenExpired".equals(e.code()) || "TokenInvalid".equals(e.code())
                || ("BadRequest".equals(e.code()) && ("solutions".equals(e.field()) || "challenge".equals(e.field()))))) {
            // the challenge expired or was spent, or the proof was refused: a new challenge
        } else {
            return false;
        }
        r.write(client.storage(), key);
        return true;
    }

    /** An arrival: the challenge, the proof (on background threads), then join. */
    private VisitorApi.Answer arrive(String previousSession, Emitter emit, Cancellation cancel)
            throws AnteroomException {
        emit.update(QueueUpdate.of(QueueState.ENTERING));
        JSONObject body;
        try (ProofOfWork solver = new ProofOfWork(client.powThreads())) {
            JSONObject ask = fields("room", slug, "maxPuzzles", 16);
            JSONObject challenge = retrying(VisitorApi.ARRIVE, ask, emit, cancel).body;
            List<String> solutions;
            try {
                solutions = solver.solveFitted(challenge, cancel);
                body = fields("room", slug, "challenge", challenge.getString("challenge"),
                        "solutions", new JSONArray(solutions));
            } catch (JSONException | IllegalArgumentException e) {
                throw new AnteroomException("BadChallenge", 200, "The waiting room sent an unusable challenge.",
                        -1, null, e);
            }
        }
        if (previousSession != null) put(body, "previousSession", previousSession);
        if (client.invite() != null) put(body, "invite", client.invite());
        VisitorApi.Answer joined = retrying(VisitorApi.JOIN, body, emit, cancel);
        JSONObject session = joined.body.optJSONObject("session");
        JSONObject queue = joined.body.optJSONObject("queue");
        if (session == null || !(session.opt("sessionToken") instanceof String) || queue == null) {
            throw new AnteroomException("BadResponse", 200, "The waiting room sent no session.");
        }
        VisitRecord r = VisitRecord.read(client.storage(), key);
        r.sessionToken = session.optString("sessionToken");
        r.sessionExpiresAt = session.optLong("expiresAt", -1);
        r.write(client.storage(), key);
        return new VisitorApi.Answer(queue, joined.retryAfterSec);
    }

    /** Runs a call until it answers, waiting out transient failures as {@link Backoff} says. */
    private VisitorApi.Answer retrying(String path, JSONObject body, Emitter emit, Cancellation cancel)
            throws AnteroomException {
        int failures = 0;
        for (;;) {
            cancel.throwIfCancelled();
            try {
                return client.api().post(path, body);
            } catch (AnteroomException e) {
                cancel.throwIfCancelled();
                long delay = Backoff.retryDelayMs(e, failures, client.random().nextDouble());
                if (delay < 0) throw e;
                if (!(e.status() == 429 && e.retryAfterSec() >= 0)) failures++;
                emit.update(QueueUpdate.failure(QueueState.RETRYING, e, delay));
                client.clock().sleep(delay, cancel);
            }
        }
    }

    /** When to poll next: pollAfterMs, else Retry-After, else 5 s; never under 250 ms. */
    static long pollDelayMs(VisitorApi.Answer answer) {
        Object after = answer.body.opt("pollAfterMs");
        long ms = after instanceof Number ? ((Number) after).longValue()
                : answer.retryAfterSec >= 0 ? answer.retryAfterSec * 1000 : DEFAULT_POLL_MS;
        return Math.max(MIN_POLL_MS, ms);
    }

    static JSONObject fields(Object... pairs) {
        JSONObject o = new JSONObject();
        for (int i = 0; i < pairs.length; i += 2) put(o, (String) pairs[i], pairs[i + 1]);
        return o;
    }

    private static void put(JSONObject o, String name, Object value) {
        try {
            o.put(name, value);
        } catch (JSONException e) {
            throw new IllegalArgumentException(e);
        }
    }

    /** Delivers updates on the callback executor; a listener's exception never stops the visit. */
    static final class Emitter {
        private final AnteroomClient client;
        private final QueueListener listener;

        Emitter(AnteroomClient client, QueueListener listener) {
            this.client = client;
            this.listener = listener;
        }

        void update(final QueueUpdate update) {
            if (listener == null) return;
            client.callbackExecutor().execute(new Runnable() {
                @Override
                public void run() {
                    try {
                        listener.onUpdate(update);
                    } catch (RuntimeException e) {
                        Thread t = Thread.currentThread();
                        if (t.getUncaughtExceptionHandler() != null) t.getUncaughtExceptionHandler().uncaughtException(t, e);
                    }
                }
            });
        }
    }

    /** A visit under way: cancel it, or wait for its outcome. */
    public static final class Visit {
        private final Future<QueueUpdate> future;
        private final Cancellation cancel;

        Visit(Future<QueueUpdate> future, Cancellation cancel) {
            this.future = future;
            this.cancel = cancel;
        }

        /** Stops the visit (the place stays kept in storage: enter again to resume it). */
        public void cancel() {
            cancel.cancel();
        }

        public boolean isDone() {
            return future.isDone();
        }

        /** Blocks until the outcome (ADMITTED or CLOSED); an error is thrown as it ended the visit. */
        public QueueUpdate await() throws AnteroomException, InterruptedException {
            try {
                return future.get();
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof AnteroomException) throw (AnteroomException) cause;
                if (cause instanceof CancellationException) throw (CancellationException) cause;
                if (cause instanceof RuntimeException) throw (RuntimeException) cause;
                throw new IllegalStateException(cause);
            }
        }
    }
}
