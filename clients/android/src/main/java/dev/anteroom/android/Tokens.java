package dev.anteroom.android;

import java.nio.charset.StandardCharsets;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * Reads a token's expiry without verifying it (the server and the edge verify; the client only
 * needs to know when to stop using one). A token is {@code <type>.<kid>.<payload>.<signature>},
 * the payload base64url JSON. Base64 is decoded here: {@code java.util.Base64} needs API 26.
 */
final class Tokens {
    private Tokens() {}

    /** The token's {@code exp} as epoch ms, or -1 when it has none or cannot be read. */
    static long expiresAtMs(String token) {
        if (token == null) return -1;
        String[] parts = token.split("\\.");
        if (parts.length != 4) return -1;
        try {
            JSONObject claims = new JSONObject(new String(base64url(parts[2]), StandardCharsets.UTF_8));
            Object exp = claims.opt("exp");
            return exp instanceof Number ? (long) (((Number) exp).doubleValue() * 1000) : -1;
        } catch (JSONException | IllegalArgumentException e) {
            return -1;
        }
    }

    static byte[] base64url(String text) {
        int[] value = new int[128];
        java.util.Arrays.fill(value, -1);
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for (int i = 0; i < 64; i++) value[alphabet.charAt(i)] = i;
        int bits = 0;
        int acc = 0;
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '=') break;
            int v = c < 128 ? value[c] : -1;
            if (v < 0) throw new IllegalArgumentException("not base64url");
            acc = (acc << 6) | v;
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                out.write((acc >> bits) & 0xff);
            }
        }
        return out.toByteArray();
    }
}
