package dev.anteroom.android;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The library targets Android API 24 (Android 7.0). javac --release 8 checks the language and
 * Java 8's library; this checks the Java 8 APIs Android added later (or never) are not used.
 */
class ApiLevelTest {
    static final String[][] ABOVE_24 = {
        {"java.net.http", "Java 11's HTTP client: not on Android"},
        {"java.nio.file", "API 26"},
        {"java.time", "API 26"},
        {"java.util.Base64", "API 26"},
        {"String.join(", "API 26"},
        {".readAllBytes(", "API 33"},
        {"List.of(", "API 30"},
        {"Map.of(", "API 30"},
        {"Set.of(", "API 30"},
        {".isBlank(", "API 33"},
        {".repeat(", "API 33"},
        {"okhttp", "no dependency but org.json"},
        {"import android.", "plain Java: testable on the JVM"},
    };

    @Test
    void theLibraryUsesNothingAboveApi24() throws IOException {
        Path main = Paths.get(System.getProperty("anteroom.src", "src/main/java"));
        if (!Files.isDirectory(main)) main = Paths.get("clients/android/src/main/java");
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(main)) {
            for (Path p : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".java"))::iterator) {
                String code = stripComments(new String(Files.readAllBytes(p), StandardCharsets.UTF_8));
                for (String[] api : ABOVE_24) {
                    if (code.contains(api[0])) found.add(p.getFileName() + ": " + api[0] + " (" + api[1] + ")");
                }
            }
        }
        assertTrue(found.isEmpty(), String.join("\n", found));
    }

    static String stripComments(String code) {
        return code.replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\n]*", "");
    }
}
