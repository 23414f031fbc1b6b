package dev.anteroom.android;

/**
 * A call to the waiting room that did not answer what the visit needs: the server's error
 * {@code code} (its {@code error} field, e.g. {@code TicketGone}, {@code RoomClosed}), or
 * {@code NetworkError} (no answer, status 0) or {@code BadResponse} (an unreadable one).
 */
public class AnteroomException extends Exception {
    private static final long serialVersionUID = 1L;
    private final String code;
    private final int status;
    private final long retryAfterSec;
    private final String field;
    private String closedMessage;

    public AnteroomException(String code, int status, String message, long retryAfterSec,
            String field, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.status = status;
        this.retryAfterSec = retryAfterSec;
        this.field = field;
    }

    public AnteroomException(String code, int status, String message) {
        this(code, status, message, -1, null, null);
    }

    /** The server's error code, or NetworkError / BadResponse / Cancelled. */
    public String code() {
        return code;
    }

    /** The HTTP status (0: no answer). */
    public int status() {
        return status;
    }

    /** Seconds the server asked to wait (Retry-After, else the body's retryAfter); -1: none. */
    public long retryAfterSec() {
        return retryAfterSec;
    }

    /** RoomClosed: the room's closed message as sent (text, or JSON of texts by language), else null. */
    public String closedMessage() {
        return closedMessage;
    }

    AnteroomException withClosedMessage(String message) {
        this.closedMessage = message;
        return this;
    }

    /** The first field the server named as wrong (e.g. {@code solutions}), or null. */
    public String field() {
        return field;
    }
}
