package dev.anteroom.android;

import java.io.IOException;

/**
 * The shape of an OkHttp interceptor, without OkHttp: an interceptor sees the request, may
 * change it, passes it on with {@link Chain#proceed} (as often as it needs) and returns an
 * answer. {@link InterceptingTransport} runs a list of them over a {@link Transport}; an app on
 * OkHttp adapts {@link QueueThroughInterceptor} in a few lines (docs/apps-android.md).
 */
public interface Interceptor {
    HttpResponse intercept(Chain chain) throws IOException;

    /** The request under way and the rest of the chain. */
    interface Chain {
        HttpRequest request();

        HttpResponse proceed(HttpRequest request) throws IOException;
    }
}
