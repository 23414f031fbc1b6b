package dev.anteroom.android;

/**
 * Told of every change a queue screen shows. Called on the executor given to
 * {@link AnteroomClient.Builder#callbackExecutor} (on Android: the main thread's), else on the
 * visit's own background thread. An exception thrown here does not stop the visit.
 */
public interface QueueListener {
    void onUpdate(QueueUpdate update);
}
