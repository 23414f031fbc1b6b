package dev.anteroom.android;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CancellationException;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The conformance kit's driver (docs/apps-android.md): does what an app would, calling
 * {@code ANTEROOM_RESOURCE} through {@link QueueThroughInterceptor} with the service at
 * {@code ANTEROOM_URL} and the public key {@code ANTEROOM_ROOM}. Prints one JSON object a line
 * for each change the screen would show, and exits 0 when the resource answered 200, 2 when the
 * room closed or refused the visitor for good, 1 otherwise (ANTEROOM_DEADLINE_MS ends it as 1).
 */
public final class ConformanceDriver {
    /** Refusals no retry or new start can change. */
    static final Set<String> FOR_GOOD = new HashSet<>(Arrays.asList(
            "RoomClosed", "QueueDenied", "SessionRevoked", "Forbidden", "RoomNotFound", "Unauthorized"));

    private ConformanceDriver() {}

    public static void main(String[] args) {
        System.exit(run(System.getenv("ANTEROOM_URL"), System.getenv("ANTEROOM_ROOM"),
                System.getenv("ANTEROOM_RESOURCE"), System.getenv("ANTEROOM_DEADLINE_MS"),
                new PrintStream(System.out, true)));
    }

    static int run(String url, String apiKey, String resource, String deadline, final PrintStream out) {
        if (url == null || apiKey == null || resource == null) {
            print(out, error("Usage", null));
            return 1;
        }
        final Cancellation cancel = new Cancellation();
        if (deadline != null && deadline.matches("\\d+")) {
            // Stop a little before the kit kills us, so the last state is said.
            final long ms = Math.max(0, Long.parseLong(deadline) - 500);
            Thread timer = new Thread(new Runnable() {
                @Override
                public void run() {
                    try {
                        Thread.sleep(ms);
                    } catch (InterruptedException e) {
                        return;
                    }
                    cancel.cancel();
                }
            }, "anteroom-deadline");
            timer.setDaemon(true);
            timer.start();
        }
        final String[] last = {null};
        final QueueState[] lastState = {null};
        QueueListener listener = new QueueListener() {
            @Override
            public void onUpdate(QueueUpdate update) {
                synchronized (last) {
                    lastState[0] = update.state;
                    String line = screen(update).toString();
                    if (!line.equals(last[0])) print(out, line);
                    last[0] = line;
                }
            }
        };
        try (AnteroomClient client = new AnteroomClient.Builder(url, apiKey).build()) {
            Transport http = new InterceptingTransport(new UrlConnectionTransport(),
                    Collections.<Interceptor>singletonList(
                            new QueueThroughInterceptor(client, listener).cancelledBy(cancel)));
            HttpResponse answer = http.execute(HttpRequest.get(resource).withHeader("Accept", "application/json"));
            if (answer.status() == 200) return 0;
            if (lastState[0] == QueueState.CLOSED) return 2;
            print(out, error("Http" + answer.status(), null));
            return 1;
        } catch (QueueThroughInterceptor.QueueThroughException e) {
            return FOR_GOOD.contains(e.anteroomError().code()) ? 2 : 1;
        } catch (CancellationException e) {
            print(out, error("Deadline", null));
            return 1;
        } catch (java.io.IOException e) {
            print(out, error("NetworkError", e.getMessage()));
            return 1;
        }
    }

    /** What the screen shows of an update: its state and the figures it names. */
    static JSONObject screen(QueueUpdate update) {
        JSONObject o = new JSONObject();
        try {
            o.put("state", update.state.wireName());
            if (update.state == QueueState.WAITING) {
                o.putOpt("position", update.position);
                o.putOpt("etaSeconds", update.etaSeconds);
                o.putOpt("odds", update.odds);
            }
            if (update.state == QueueState.ERROR || update.state == QueueState.RETRYING) o.putOpt("code", update.code);
            if (update.state == QueueState.RETRYING) o.putOpt("retryInMs", update.retryInMs);
        } catch (JSONException e) {
            throw new IllegalStateException(e);
        }
        return o;
    }

    private static String error(String code, String message) {
        JSONObject o = new JSONObject();
        try {
            o.put("state", "error");
            o.put("code", code);
            o.putOpt("message", message);
        } catch (JSONException e) {
            throw new IllegalStateException(e);
        }
        return o.toString();
    }

    private static void print(PrintStream out, Object line) {
        synchronized (out) {
            out.print(line + "\n");
            out.flush();
        }
    }
}
