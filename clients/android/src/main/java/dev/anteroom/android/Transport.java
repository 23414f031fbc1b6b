package dev.anteroom.android;

import java.io.IOException;

/** Sends one HTTP request; {@link UrlConnectionTransport} is the default. */
public interface Transport {
    HttpResponse execute(HttpRequest request) throws IOException;
}
