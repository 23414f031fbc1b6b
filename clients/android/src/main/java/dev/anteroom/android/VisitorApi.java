package dev.anteroom.android;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The visitor API's calls: each a POST of {@code {apiKey, ...}} as JSON. An answer that is not
 * a 2xx throws {@link AnteroomException} with the server's {@code error} code, the status and
 * the wait it asked for (Retry-After, else the body's {@code retryAfter}).
 */
public final class VisitorApi {
    public static final String ARRIVE = "/api/v1/arrive";
    public static final String JOIN = "/api/v1/queue/join";
    public static final String ENTER = "/api/v1/queue/enter";
    public static final String POLL = "/api/v1/queue/poll";
    public static final String LEAVE = "/api/v1/queue/leave";
    public static final String REFRESH = "/api/v1/admission/refresh";

    /** A 2xx answer: its JSON (empty for a 204) and the Retry-After it carried (-1: none). */
    public static final class Answer {
        public final JSONObject body;
        public final long retryAfterSec;

        Answer(JSONObject body, long retryAfterSec) {
            this.body = body;
            this.retryAfterSec = retryAfterSec;
        }
    }

    private final String baseUrl;
    private final String apiKey;
    private final Transport transport;
    private final Clock clock;

    public VisitorApi(String baseUrl, String apiKey, Transport transport, Clock clock) {
        this.baseUrl = baseUrl.replaceAll("/+$", "");
        this.apiKey = apiKey;
        this.transport = transport;
        this.clock = clock;
    }

    public String baseUrl() {
        return baseUrl;
    }

    public String apiKey() {
        return apiKey;
    }

    /** POSTs {@code fields} (with the apiKey) to {@code path}. */
    public Answer post(String path, JSONObject fields) throws AnteroomException {
        JSONObject body = new JSONObject();
        try {
            body.put("apiKey", apiKey);
            Iterator<String> names = fields.keys();
            while (names.hasNext()) {
                String name = names.next();
                body.put(name, fields.get(name));
            }
        } catch (JSONException e) {
            throw new IllegalArgumentException(e);
        }
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Content-Type", "application/json");
        headers.put("Accept", "application/json");
        HttpRequest request = new HttpRequest("POST", baseUrl + path, headers,
                body.toString().getBytes(StandardCharsets.UTF_8));
        HttpResponse response;
        try {
            response = transport.execute(request);
        } catch (IOException e) {
            throw new AnteroomException("NetworkError", 0, "The waiting room could not be reached.", -1, null, e);
        }
        JSONObject answer = parse(response.bodyText());
        long retryAfter = parseRetryAfter(response.header("Retry-After"), clock.nowMs());
        if (retryAfter < 0 && answer != null && answer.opt("retryAfter") instanceof Number) {
            retryAfter = answer.optLong("retryAfter", -1);
        }
        int status = response.status();
        if (status >= 200 && status < 300) {
            if (status == 204) return new Answer(new JSONObject(), retryAfter);
            if (answer == null) {
                throw new AnteroomException("BadResponse", status, "The waiting room sent an unreadable answer.");
            }
            return new Answer(answer, retryAfter);
        }
        String code = answer != null && answer.opt("error") instanceof String
                ? answer.optString("error") : "Http" + status;
        String message = answer != null && answer.opt("message") instanceof String
                ? answer.optString("message") : "The waiting room answered " + status + ".";
        String field = null;
        JSONObject fieldsOf = answer == null ? null : answer.optJSONObject("fields");
        if (fieldsOf != null && fieldsOf.keys().hasNext()) field = fieldsOf.keys().next();
        Object closed = answer == null ? null : answer.opt("closedMessage");
        String closedText = closed == null || closed == JSONObject.NULL ? null : closed.toString();
        throw new AnteroomException(code, status, message, retryAfter, field, null).withClosedMessage(closedText);
    }

    private static JSONObject parse(String text) {
        if (text == null || text.isEmpty()) return null;
        try {
            return new JSONObject(text);
        } catch (JSONException e) {
            return null;
        }
    }

    /** Retry-After as seconds: delta-seconds, or an HTTP date counted from {@code nowMs}; -1: none. */
    public static long parseRetryAfter(String value, long nowMs) {
        if (value == null || value.trim().isEmpty()) return -1;
        String v = value.trim();
        if (v.matches("\\d+(\\.\\d+)?")) return (long) Math.ceil(Double.parseDouble(v));
        try {
            java.text.SimpleDateFormat http = new java.text.SimpleDateFormat(
                    "EEE, dd MMM yyyy HH:mm:ss zzz", java.util.Locale.US);
            http.setTimeZone(java.util.TimeZone.getTimeZone("GMT"));
            long at = http.parse(v).getTime();
            return Math.max(0, (long) Math.ceil((at - nowMs) / 1000.0));
        } catch (java.text.ParseException e) {
            return -1;
        }
    }
}
