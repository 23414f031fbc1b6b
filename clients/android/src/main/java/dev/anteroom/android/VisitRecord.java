package dev.anteroom.android;

import org.json.JSONException;
import org.json.JSONObject;

/**
 * What a visit keeps in {@link Storage} under one key per service, key and room: the ticket
 * (queueToken) that holds its place, the session that proves who it is, and the admission.
 */
final class VisitRecord {
    String queueToken;
    String sessionToken;
    long sessionExpiresAt = -1;
    String admission;
    long admissionExpiresAt = -1;

    static VisitRecord read(Storage storage, String key) {
        VisitRecord r = new VisitRecord();
        String text = storage.get(key);
        if (text == null) return r;
        try {
            JSONObject o = new JSONObject(text);
            r.queueToken = o.optString("queueToken", null);
            r.sessionToken = o.optString("sessionToken", null);
            r.sessionExpiresAt = o.optLong("sessionExpiresAt", -1);
            r.admission = o.optString("admission", null);
            r.admissionExpiresAt = o.optLong("admissionExpiresAt", -1);
        } catch (JSONException e) {
            return new VisitRecord(); // unreadable: enter afresh rather than fail
        }
        return r;
    }

    void write(Storage storage, String key) {
        JSONObject o = new JSONObject();
        try {
            o.putOpt("queueToken", queueToken);
            o.putOpt("sessionToken", sessionToken);
            o.put("sessionExpiresAt", sessionExpiresAt);
            o.putOpt("admission", admission);
            o.put("admissionExpiresAt", admissionExpiresAt);
        } catch (JSONException e) {
            throw new IllegalStateException(e);
        }
        storage.put(key, o.toString());
    }

    boolean sessionLive(long now, long marginMs) {
        return sessionToken != null && (sessionExpiresAt < 0 || sessionExpiresAt - marginMs > now);
    }

    boolean admissionLive(long now, long marginMs) {
        return admission != null && (admissionExpiresAt < 0 || admissionExpiresAt - marginMs > now);
    }
}
