package dev.anteroom.android;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** An HTTP request as the transport and the interceptors see it: immutable. */
public final class HttpRequest {
    private final String method;
    private final String url;
    private final Map<String, String> headers;
    private final byte[] body;

    public HttpRequest(String method, String url, Map<String, String> headers, byte[] body) {
        this.method = method.toUpperCase(Locale.ROOT);
        this.url = url;
        this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
        this.body = body;
    }

    public static HttpRequest get(String url) {
        return new HttpRequest("GET", url, Collections.<String, String>emptyMap(), null);
    }

    public String method() {
        return method;
    }

    public String url() {
        return url;
    }

    public Map<String, String> headers() {
        return headers;
    }

    /** The body, or null. */
    public byte[] body() {
        return body;
    }

    /** A header's value (names compared case-insensitively), or null. */
    public String header(String name) {
        for (Map.Entry<String, String> e : headers.entrySet()) {
            if (e.getKey().equalsIgnoreCase(name)) return e.getValue();
        }
        return null;
    }

    /** This request with {@code name} set to {@code value} (replacing any header of that name). */
    public HttpRequest withHeader(String name, String value) {
        Map<String, String> copy = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : headers.entrySet()) {
            if (!e.getKey().equalsIgnoreCase(name)) copy.put(e.getKey(), e.getValue());
        }
        copy.put(name, value);
        return new HttpRequest(method, url, copy, body);
    }
}
