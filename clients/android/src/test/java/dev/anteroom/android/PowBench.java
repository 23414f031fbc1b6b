package dev.anteroom.android;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

/**
 * The proof of work's speed on this JVM, for bench/android_pow.py: reads lines
 * {@code <threads> <ms>} on stdin and answers each with the hashes a second the real solver
 * ({@link ProofOfWork#solve}, its thread pool and all) reached on that many threads, solving
 * batches of difficulty-16 puzzles (65,536 hashes each on average) for about {@code ms}. One
 * process serves every round, so the JIT is warm after the first.
 */
public final class PowBench {
    private PowBench() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        long batch = 0;
        for (String line; (line = in.readLine()) != null;) {
            String[] parts = line.trim().split("\\s+");
            int threads = Integer.parseInt(parts[0]);
            long ms = Long.parseLong(parts[1]);
            long hashes = 0;
            long started = System.nanoTime();
            try (ProofOfWork pow = new ProofOfWork(threads)) {
                while ((System.nanoTime() - started) / 1_000_000L < ms) {
                    List<ProofOfWork.Puzzle> puzzles = new ArrayList<>();
                    for (int i = 0; i < threads * 2; i++) puzzles.add(new ProofOfWork.Puzzle("bench" + batch + "." + i, 16));
                    batch++;
                    hashes += pow.solve(puzzles, new Cancellation()).hashes;
                }
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            System.out.println("{\"threads\":" + threads + ",\"hashes\":" + hashes + ",\"seconds\":" + seconds
                    + ",\"perSecond\":" + Math.round(hashes / seconds) + "}");
            System.out.flush();
        }
    }
}
