package dev.anteroom.android;

import java.io.File;
import java.io.PrintStream;
import java.util.Collections;

/**
 * The live scenarios tests/integration/test_android_client.py plays against a real
 * {@code anteroom serve}: it reads the JSON lines printed here and moves the room's clock.
 * Environment: ANTEROOM_URL, ANTEROOM_KEY, ANTEROOM_SLUG, ANTEROOM_STORAGE (a file).
 *
 * <ul>
 *   <li>{@code until-waiting}: walks the line and, at the first WAITING, stops the process dead
 *       (halt: no clean-up runs), as Android kills a backgrounded app;
 *   <li>{@code until-admitted}: walks the line to its outcome and prints it with the admission;
 *   <li>{@code post URL}: POSTs to URL through the queue-through interceptor, prints the status.
 * </ul>
 */
public final class LiveVisit {
    private LiveVisit() {}

    public static void main(String[] args) throws Exception {
        final PrintStream out = new PrintStream(System.out, true);
        String url = System.getenv("ANTEROOM_URL");
        String key = System.getenv("ANTEROOM_KEY");
        String slug = System.getenv("ANTEROOM_SLUG");
        String storage = System.getenv("ANTEROOM_STORAGE");
        final String mode = args[0];
        QueueListener print = update -> {
            out.println(update.toJson());
            if (mode.equals("until-waiting") && update.state == QueueState.WAITING) {
                out.flush();
                Runtime.getRuntime().halt(0);
            }
        };
        try (AnteroomClient client = new AnteroomClient.Builder(url, key)
                .storage(new FileStorage(new File(storage))).build()) {
            if (mode.equals("post")) {
                Transport http = new InterceptingTransport(new UrlConnectionTransport(),
                        Collections.<Interceptor>singletonList(new QueueThroughInterceptor(client, print)));
                HttpResponse answer = http.execute(new HttpRequest("POST", args[1],
                        Collections.singletonMap("Content-Type", "application/json"), "[]".getBytes("UTF-8")));
                out.println("{\"status\":" + answer.status() + "}");
                return;
            }
            QueueUpdate outcome = client.room(slug).awaitOutcome(print, new Cancellation());
            out.println("{\"outcome\":\"" + outcome.state.wireName() + "\",\"admission\":\""
                    + outcome.admission + "\"}");
        }
    }
}
