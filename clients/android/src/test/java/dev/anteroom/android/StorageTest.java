package dev.anteroom.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StorageTest {
    @TempDir
    Path dir;

    @Test
    void inMemoryStorageKeepsAndForgets() {
        Storage s = new InMemoryStorage();
        assertNull(s.get("k"));
        s.put("k", "v");
        assertEquals("v", s.get("k"));
        s.remove("k");
        assertNull(s.get("k"));
    }

    @Test
    void fileStorageOutlivesTheObjectThatWroteIt() {
        File file = dir.resolve("state/anteroom.json").toFile();
        Storage first = new FileStorage(file);
        first.put("a", "{\"queueToken\":\"qt1.x\"}");
        first.put("b", "2");
        first.remove("b");
        Storage second = new FileStorage(file); // as a new process would open it
        assertEquals("{\"queueToken\":\"qt1.x\"}", second.get("a"));
        assertNull(second.get("b"));
        assertFalse(new File(file.getPath() + ".tmp").exists());
    }

    @Test
    void anUnreadableFileReadsAsEmptyAndIsReplacedOnWrite() throws Exception {
        File file = dir.resolve("broken.json").toFile();
        Files.write(file.toPath(), "{half a reco".getBytes(StandardCharsets.UTF_8));
        Storage s = new FileStorage(file);
        assertNull(s.get("a"));
        s.put("a", "1");
        assertEquals("1", new FileStorage(file).get("a"));
    }

    @Test
    void aVisitRecordRoundTripsThroughStorage() {
        Storage s = new InMemoryStorage();
        VisitRecord r = new VisitRecord();
        r.queueToken = "qt1.a";
        r.sessionToken = "st1.b";
        r.sessionExpiresAt = 1234;
        r.admission = "ab1.c";
        r.admissionExpiresAt = 99;
        r.write(s, "key");
        VisitRecord back = VisitRecord.read(s, "key");
        assertEquals("qt1.a", back.queueToken);
        assertEquals("st1.b", back.sessionToken);
        assertEquals(1234, back.sessionExpiresAt);
        assertEquals("ab1.c", back.admission);
        assertEquals(99, back.admissionExpiresAt);
        s.put("key", "not json");
        assertNull(VisitRecord.read(s, "key").queueToken);
    }

    @Test
    void aTokensExpiryIsReadFromItsPayload() {
        // {"exp":1700000000,"vid":"v"} base64url, as the server signs it
        String payload = java.util.Base64.getUrlEncoder().withoutPadding()
                .encodeToString("{\"exp\":1700000000,\"vid\":\"v\"}".getBytes(StandardCharsets.UTF_8));
        assertEquals(1_700_000_000_000L, Tokens.expiresAtMs("ab1.k1." + payload + ".sig"));
        assertEquals(-1, Tokens.expiresAtMs("ab1.k1.%%%.sig"));
        assertEquals(-1, Tokens.expiresAtMs("nonsense"));
        for (String text : new String[] {"", "a", "ab", "abc", "abcd", "\u00e9t\u00e9"}) {
            byte[] raw = text.getBytes(StandardCharsets.UTF_8);
            String enc = java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
            assertEquals(text, new String(Tokens.base64url(enc), StandardCharsets.UTF_8));
        }
    }
}
