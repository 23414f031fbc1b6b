package dev.anteroom.android;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;

/**
 * Cancels a visit: its waits end at once, its proof of work stops within a few thousand hashes,
 * and what is waiting on it throws {@link CancellationException}. Thread-safe; cancelling twice
 * is harmless.
 */
public final class Cancellation {
    private final Object lock = new Object();
    private final List<Runnable> callbacks = new ArrayList<>();
    private volatile boolean cancelled;

    /** Cancels, waking every wait and running the callbacks registered so far. */
    public void cancel() {
        List<Runnable> run;
        synchronized (lock) {
            if (cancelled) return;
            cancelled = true;
            lock.notifyAll();
            run = new ArrayList<>(callbacks);
            callbacks.clear();
        }
        for (Runnable callback : run) callback.run();
    }

    public boolean isCancelled() {
        return cancelled;
    }

    /** Throws {@link CancellationException} once cancelled. */
    public void throwIfCancelled() {
        if (cancelled) throw new CancellationException("The visit was cancelled.");
    }

    /** Runs {@code callback} on cancel (at once if cancelled already). */
    public void onCancel(Runnable callback) {
        synchronized (lock) {
            if (!cancelled) {
                callbacks.add(callback);
                return;
            }
        }
        callback.run();
    }

    /** Waits {@code ms} of real time, or less if cancelled meanwhile (then throws). */
    public void sleep(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        synchronized (lock) {
            for (;;) {
                throwIfCancelled();
                long left = (end - System.nanoTime()) / 1_000_000L;
                if (left <= 0) return;
                try {
                    lock.wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new CancellationException("The visit's thread was interrupted.");
                }
            }
        }
    }
}
