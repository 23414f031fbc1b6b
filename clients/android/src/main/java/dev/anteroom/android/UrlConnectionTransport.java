package dev.anteroom.android;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.util.List;
import java.util.Map;

/** A {@link Transport} on {@link HttpURLConnection}: no redirects followed, no caching. */
public final class UrlConnectionTransport implements Transport {
    private final int connectTimeoutMs;
    private final int readTimeoutMs;

    public UrlConnectionTransport(int connectTimeoutMs, int readTimeoutMs) {
        this.connectTimeoutMs = connectTimeoutMs;
        this.readTimeoutMs = readTimeoutMs;
    }

    public UrlConnectionTransport() {
        this(10_000, 15_000);
    }

    @Override
    public HttpResponse execute(HttpRequest request) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(request.url()).openConnection();
        try {
            c.setConnectTimeout(connectTimeoutMs);
            c.setReadTimeout(readTimeoutMs);
            c.setInstanceFollowRedirects(false);
            c.setUseCaches(false);
            c.setRequestMethod(request.method());
            for (Map.Entry<String, String> h : request.headers().entrySet()) {
                c.setRequestProperty(h.getKey(), h.getValue());
            }
            byte[] body = request.body();
            if (body != null) {
                c.setDoOutput(true);
                // Not setFixedLengthStreamingMode: in streaming mode the JDK's connection gives no
                // error stream for a 401, and the visitor API's 401s (TokenExpired) say what to do.
                try (OutputStream out = c.getOutputStream()) {
                    out.write(body);
                }
            }
            int status = c.getResponseCode();
            InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
            byte[] answer = in == null ? new byte[0] : readAll(in);
            Map<String, List<String>> headers = c.getHeaderFields();
            return new HttpResponse(status, headers, answer);
        } finally {
            c.disconnect();
        }
    }

    static byte[] readAll(InputStream in) throws IOException {
        try (InputStream stream = in) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            for (int n; (n = stream.read(buf)) > 0;) out.write(buf, 0, n);
            return out.toByteArray();
        }
    }
}
