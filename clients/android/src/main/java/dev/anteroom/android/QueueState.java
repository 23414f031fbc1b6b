package dev.anteroom.android;

/** What an app's queue screen shows. */
public enum QueueState {
    /** Taking a place: the proof of work and the first calls (show a spinner). */
    ENTERING,
    /** In line: {@link QueueUpdate#position} and {@link QueueUpdate#etaSeconds} (null in a random room: show odds). */
    WAITING,
    /** Entered before the opening: waiting for the draw that gives the places ({@link QueueUpdate#opensAt}). */
    IN_DRAW,
    /** Let in: {@link QueueUpdate#admission} is the token for the app's own calls. */
    ADMITTED,
    /** The room takes no one now (closed, or not queueing): {@link QueueUpdate#closedMessage}. */
    CLOSED,
    /** A call failed for now and is repeated in {@link QueueUpdate#retryInMs} (the place is kept). */
    RETRYING,
    /** The visit ended on an error: {@link QueueUpdate#code}. */
    ERROR;

    /** The name an app or a log shows: waiting, in_draw, ... */
    public String wireName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
