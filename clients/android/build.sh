#!/bin/sh
# Builds the Android client with the JDK alone (no Gradle, no Maven repository):
#   ./build.sh          compile the library into build/classes
#   ./build.sh test     also compile the tests into build/test-classes and run the JUnit 5 suite
#   ./build.sh classes  compile the library and the tests, run nothing (bench/android_pow.py)
# Needs Debian's openjdk-17-jdk-headless, libandroid-json-java (org.json as Android ships it)
# and junit5 (`make android` installs them).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
JSON_JAR=${ANDROID_JSON_JAR:-/usr/share/java/com.android.json.jar}
JUNIT_JAR=${JUNIT_CONSOLE_JAR:-/usr/share/java/junit-platform-console-standalone.jar}
BUILD="$HERE/build"

# Compiled beside the last build and swapped in whole: a driver started meanwhile (the
# conformance kit's, the live tests') loads whole classes, old or new, never a mix.
NEW="$BUILD/classes.new.$$"
rm -rf "$NEW" "$BUILD/test-classes"
mkdir -p "$NEW" "$BUILD/test-classes"
# Java 8 language and library level: what every Android toolchain takes without desugaring.
javac -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC --release 8 -Xlint:all -Xlint:-options -Werror -encoding UTF-8 \
    -cp "$JSON_JAR" -d "$NEW" $(find "$HERE/src/main/java" -name '*.java')
rm -rf "$BUILD/classes.old.$$"
[ -d "$BUILD/classes" ] && mv "$BUILD/classes" "$BUILD/classes.old.$$"
mv "$NEW" "$BUILD/classes"
rm -rf "$BUILD/classes.old.$$"
(cd "$BUILD/classes" && jar -J-XX:TieredStopAtLevel=1 --create --file "$BUILD/anteroom-android.jar" .)

if [ "${1:-}" = "test" ] || [ "${1:-}" = "classes" ]; then
    javac -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC --release 17 -encoding UTF-8 -cp "$BUILD/classes:$JSON_JAR:$JUNIT_JAR" \
        -d "$BUILD/test-classes" $(find "$HERE/src/test/java" -name '*.java')
    cp -r "$HERE/src/test/resources/." "$BUILD/test-classes/"
fi
if [ "${1:-}" = "test" ]; then
    java -Danteroom.src="$HERE/src/main/java" -jar "$JUNIT_JAR" --disable-banner --fail-if-no-tests --details=summary \
        --class-path "$BUILD/classes:$BUILD/test-classes:$JSON_JAR" \
        --select-package dev.anteroom.android --exclude-classname '.*Live.*'
fi
