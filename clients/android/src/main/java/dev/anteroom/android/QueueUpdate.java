package dev.anteroom.android;

import org.json.JSONException;
import org.json.JSONObject;

/** One state of a visit, with what the screen needs for it; absent figures are null. */
public final class QueueUpdate {
    public final QueueState state;
    /** The visitor's number in the line (fixed once given; show it as "your number"), else null. */
    public final Integer ticket;
    /** Place in line (WAITING in a fifo room), else null. */
    public final Integer position;
    /** Seconds to admission as the server estimates them, else null. */
    public final Integer etaSeconds;
    /** In a random room: the chance of admission in the next minute, else null. */
    public final Double odds;
    /** Epoch ms of the room's opening (IN_DRAW, a scheduled room), else null. */
    public final Long opensAt;
    /** The room's status as the server reports it (open, paused, idle), else null. */
    public final String roomStatus;
    /** ADMITTED: the admission token, for the {@code Anteroom-Admission} header. */
    public final String admission;
    /** ADMITTED: where a web flow would go next (the room's redirectUrl), else null. */
    public final String redirectUrl;
    /** CLOSED: the room's closed message as sent (text, or JSON of texts by language), else null. */
    public final String closedMessage;
    /** RETRYING / ERROR: the error code (e.g. Unavailable, NetworkError, RoomClosed). */
    public final String code;
    /** RETRYING / ERROR: the server's message. */
    public final String message;
    /** RETRYING: milliseconds until the call is repeated. */
    public final Long retryInMs;

    QueueUpdate(QueueState state, Integer ticket, Integer position, Integer etaSeconds, Double odds, Long opensAt,
            String roomStatus, String admission, String redirectUrl, String closedMessage,
            String code, String message, Long retryInMs) {
        this.state = state;
        this.ticket = ticket;
        this.position = position;
        this.etaSeconds = etaSeconds;
        this.odds = odds;
        this.opensAt = opensAt;
        this.roomStatus = roomStatus;
        this.admission = admission;
        this.redirectUrl = redirectUrl;
        this.closedMessage = closedMessage;
        this.code = code;
        this.message = message;
        this.retryInMs = retryInMs;
    }

    static QueueUpdate of(QueueState state) {
        return new QueueUpdate(state, null, null, null, null, null, null, null, null, null, null, null, null);
    }

    static QueueUpdate failure(QueueState state, AnteroomException e, Long retryInMs) {
        return new QueueUpdate(state, null, null, null, null, null, null, null, null, null,
                e.code(), e.getMessage(), retryInMs);
    }

    static QueueUpdate admitted(String admission, String redirectUrl) {
        return new QueueUpdate(QueueState.ADMITTED, null, null, null, null, null, null, admission, redirectUrl,
                null, null, null, null);
    }

    /** The update a queue answer ({@code status} waiting, held, admitted or idle) shows. */
    static QueueUpdate fromAnswer(JSONObject a) {
        String status = a.optString("status");
        QueueState state;
        switch (status) {
            case "waiting": state = QueueState.WAITING; break;
            case "held": state = QueueState.IN_DRAW; break;
            case "admitted": state = QueueState.ADMITTED; break;
            default: state = QueueState.CLOSED;
        }
        Object closed = a.opt("closedMessage");
        return new QueueUpdate(state, intOrNull(a, "ticket"), intOrNull(a, "position"), intOrNull(a, "etaSeconds"),
                a.opt("odds") instanceof Number ? a.optDouble("odds") : null,
                a.opt("opensAt") instanceof Number ? a.optLong("opensAt") : null,
                a.opt("roomStatus") instanceof String ? a.optString("roomStatus") : null,
                a.opt("token") instanceof String ? a.optString("token") : null,
                a.opt("redirectUrl") instanceof String ? a.optString("redirectUrl") : null,
                closed == null || closed == JSONObject.NULL ? null : closed.toString(),
                null, null, null);
    }

    private static Integer intOrNull(JSONObject a, String name) {
        return a.opt(name) instanceof Number ? a.optInt(name) : null;
    }

    /** This update as one JSON object ({@code state} and the figures it has), as the conformance driver prints it. */
    public JSONObject toJson() {
        JSONObject o = new JSONObject();
        try {
            o.put("state", state.wireName());
            o.putOpt("ticket", ticket);
            o.putOpt("position", position);
            o.putOpt("etaSeconds", etaSeconds);
            o.putOpt("odds", odds);
            o.putOpt("opensAt", opensAt);
            o.putOpt("code", code);
            o.putOpt("retryInMs", retryInMs);
        } catch (JSONException e) {
            throw new IllegalStateException(e);
        }
        return o;
    }

    @Override
    public String toString() {
        return toJson().toString();
    }
}
