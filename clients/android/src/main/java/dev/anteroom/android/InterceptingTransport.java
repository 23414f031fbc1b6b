package dev.anteroom.android;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** A {@link Transport} that runs its interceptors, in order, in front of another one. */
public final class InterceptingTransport implements Transport {
    private final Transport base;
    private final List<Interceptor> interceptors;

    public InterceptingTransport(Transport base, List<Interceptor> interceptors) {
        this.base = base;
        this.interceptors = new ArrayList<>(interceptors);
    }

    @Override
    public HttpResponse execute(HttpRequest request) throws IOException {
        return new Link(0, request).proceed(request);
    }

    private final class Link implements Interceptor.Chain {
        private final int index;
        private final HttpRequest request;

        Link(int index, HttpRequest request) {
            this.index = index;
            this.request = request;
        }

        @Override
        public HttpRequest request() {
            return request;
        }

        @Override
        public HttpResponse proceed(HttpRequest next) throws IOException {
            if (index == interceptors.size()) return base.execute(next);
            return interceptors.get(index).intercept(new Link(index + 1, next));
        }
    }
}
