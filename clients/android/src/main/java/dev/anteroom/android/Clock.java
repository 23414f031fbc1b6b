package dev.anteroom.android;

/** Time as the client sees it; tests give one of their own so that no test waits for real. */
public interface Clock {
    /** Epoch milliseconds. */
    long nowMs();

    /** Waits {@code ms}, ending early (with CancellationException) if {@code cancel} fires. */
    void sleep(long ms, Cancellation cancel);

    /** The device's clock. */
    Clock SYSTEM = new Clock() {
        @Override
        public long nowMs() {
            return System.currentTimeMillis();
        }

        @Override
        public void sleep(long ms, Cancellation cancel) {
            cancel.sleep(ms);
        }
    };
}
