package dev.anteroom.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.atomic.AtomicReference;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** The proof of work against vectors the server's own code made (pow_vectors.py). */
class ProofOfWorkTest {
    static JSONObject vectors() throws Exception {
        try (InputStream in = ProofOfWorkTest.class.getResourceAsStream("/pow_vectors.json")) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[4096];
            for (int n; (n = in.read(buf)) > 0;) out.write(buf, 0, n);
            return new JSONObject(new String(out.toByteArray(), StandardCharsets.UTF_8));
        }
    }

    @Test
    void everyPuzzleGetsTheLeastSolutionTheServerFinds() throws Exception {
        JSONArray cases = vectors().getJSONArray("cases");
        assertTrue(cases.length() >= 4);
        try (ProofOfWork pow = new ProofOfWork(4)) {
            for (int c = 0; c < cases.length(); c++) {
                JSONObject v = cases.getJSONObject(c);
                assertTrue(v.getBoolean("acceptedByServer"));
                int difficulty = v.getInt("difficulty");
                List<ProofOfWork.Puzzle> puzzles = new ArrayList<>();
                List<String> expected = new ArrayList<>();
                for (int i = 0; i < v.getJSONArray("prefixes").length(); i++) {
                    puzzles.add(new ProofOfWork.Puzzle(v.getJSONArray("prefixes").getString(i), difficulty));
                    expected.add(v.getJSONArray("solutions").getString(i));
                }
                ProofOfWork.Solved solved = pow.solve(puzzles, new Cancellation());
                assertEquals(expected, solved.solutions, v.getString("challenge"));
                long hashes = 0;
                for (String s : expected) hashes += Long.parseLong(s) + 1;
                assertEquals(hashes, solved.hashes);
                for (int i = 0; i < puzzles.size(); i++) {
                    String prefix = puzzles.get(i).prefix;
                    long least = Long.parseLong(expected.get(i));
                    assertTrue(ProofOfWork.check(prefix, expected.get(i), difficulty));
                    if (least > 0) assertFalse(ProofOfWork.check(prefix, Long.toString(least - 1), difficulty));
                }
            }
        }
    }

    @Test
    void leadingZeroBitsAreCountedAsTheServerCountsThem() throws Exception {
        JSONArray bits = vectors().getJSONArray("leadingZeroBits");
        for (int i = 0; i < bits.length(); i++) {
            JSONObject v = bits.getJSONObject(i);
            byte[] digest = ProofOfWork.sha256().digest(v.getString("text").getBytes(StandardCharsets.UTF_8));
            int n = v.getInt("leadingZeroBits");
            assertTrue(ProofOfWork.meets(digest, n), v.getString("text"));
            assertFalse(ProofOfWork.meets(digest, n + 1), v.getString("text"));
        }
    }

    @Test
    void countersCrossingAPowerOfTenAreWrittenRight() {
        // The in-place decimal increment: 9 -> 10, 99 -> 100 must hash "10", "100".
        for (int d = 0; d <= 9; d++) {
            long found = ProofOfWork.search("carry", d, null);
            assertTrue(ProofOfWork.check("carry", Long.toString(found), d));
            for (long s = 0; s < found; s++) assertFalse(ProofOfWork.check("carry", Long.toString(s), d));
        }
    }

    @Test
    void theFittedCountFollowsTheMeasuredRate() {
        // 4 puzzles of 2^10 hashes in 100 ms: 40,960 hashes/s; 16 in all with fitMs 1000 gives
        // floor(40960 * 1 / 1.5 / 1024) = 26 -> all 16; with fitMs 200: floor(5.33) = 5.
        assertEquals(16, ProofOfWork.fittedCount(4096, 100, 16, 4, 1000, 10));
        assertEquals(5, ProofOfWork.fittedCount(4096, 100, 16, 4, 200, 10));
        // never below the floor
        assertEquals(4, ProofOfWork.fittedCount(4096, 100, 16, 4, 10, 10));
    }

    @Test
    void aCancelledSolveStopsWithoutFinding() throws Exception {
        final Cancellation cancel = new Cancellation();
        final AtomicReference<Throwable> ended = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try (ProofOfWork pow = new ProofOfWork(2)) {
                List<ProofOfWork.Puzzle> hard = new ArrayList<>();
                hard.add(new ProofOfWork.Puzzle("never", 60));
                hard.add(new ProofOfWork.Puzzle("never-either", 60));
                pow.solve(hard, cancel);
            } catch (Throwable e) {
                ended.set(e);
            }
        });
        t.start();
        cancel.cancel();
        t.join(10_000);
        assertFalse(t.isAlive());
        assertTrue(ended.get() instanceof CancellationException, String.valueOf(ended.get()));
    }

    @Test
    void aChallengeWithoutPuzzlesIsRefused() {
        assertThrows(org.json.JSONException.class, () -> ProofOfWork.puzzlesOf(new JSONObject("{\"puzzles\":[]}")));
        assertThrows(org.json.JSONException.class,
                () -> ProofOfWork.puzzlesOf(new JSONObject("{\"puzzles\":[{\"prefix\":\"a\",\"difficulty\":99}]}")));
    }
}
