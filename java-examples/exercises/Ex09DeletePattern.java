///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex09Check.java

// Exercise 9, "Delete a pattern without stopping the server" (chapter 9, 'Deleting or expiring by pattern').
// Old sessions must go: every key that matches a pattern. The code below works, and on a small
// keyspace nobody notices; on a large one KEYS walks every key in one command, then one DEL
// deletes every match in one more, and the server serves no other client meanwhile. Rewrite
// deletePattern so that it walks the keyspace with SCAN and a COUNT, deletes each page's keys
// with UNLINK (one call per page, or pipelined), touches no other key, and returns how many keys
// it deleted. Run the check on the code as it is first and read what it says.
//
// The check stores 100,000 keys under pipelab:ex09:session: and 100,000 beside them under
// pipelab:ex09: (half of them pipelab:ex09:session-archive:*), hands deletePattern a Jedis and
// the pattern, and checks that every matching key is gone, every other key untouched (value and
// no expiry), that KEYS never ran, that no command of yours took over 10 ms (the server's slow
// log), and that you deleted at least 10 keys per round trip (the server's reads).
//
//   jbang ex09 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex09DeletePattern.java (jbang ex09-solution).

import java.util.Set;

import redis.clients.jedis.Jedis;

public class Ex09DeletePattern {

    public static void main(String[] args) {
        Ex09Check.ex09(args, Ex09DeletePattern::deletePattern);
    }

    /** Deletes every key matching `pattern` and returns how many it deleted. */
    static long deletePattern(Jedis jedis, String pattern) {
        // TODO: as it stands this blocks the server twice (run the check to see for how long).
        //       1. Walk the keyspace with jedis.scan(cursor, new ScanParams().match(pattern).count(1000))
        //          until the cursor comes back as ScanParams.SCAN_POINTER_START ("0").
        //       2. UNLINK each page's keys as it comes (one call per page, or queued on jedis.pipelined()).
        //       3. Return the sum of UNLINK's replies.
        Set<String> keys = jedis.keys(pattern); // one command that walks every key on the server
        return keys.isEmpty() ? 0 : jedis.del(keys.toArray(new String[0])); // one more that deletes them all
    }
}
