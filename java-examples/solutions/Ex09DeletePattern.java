///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex09Check.java

// Solution of exercise 9, "Delete a pattern without stopping the server"
// (the task: java-examples/exercises/Ex09DeletePattern.java).
//
//   jbang ex09-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

import java.util.List;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

public class Ex09DeletePattern {

    private static final int COUNT = 1000;

    public static void main(String[] args) {
        Ex09Check.ex09(args, Ex09DeletePattern::deletePattern);
    }

    static long deletePattern(Jedis jedis, String pattern) {
        // COUNT: about a thousand buckets of the key table per SCAN, well under a millisecond each.
        ScanParams params = new ScanParams().match(pattern).count(COUNT);
        long deleted = 0;
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = jedis.scan(cursor, params);
            List<String> keys = page.getResult();
            if (!keys.isEmpty()) {
                deleted += jedis.unlink(keys.toArray(new String[0])); // a page's keys, one command
            }
            cursor = page.getCursor();
        } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
        return deleted;
    }
}
