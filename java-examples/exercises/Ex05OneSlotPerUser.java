///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex05Check.java

// Exercise 5, "One slot per user" (chapter 5, 'CROSSSLOT, and what hash tags cost').
// Redis Cluster runs a multi-key command (MSET, MULTI/EXEC) only on keys of one slot, and a
// key's slot is CRC16 of its name, or of the part between the first { and } if there is one.
// Write userKey so that the key starts with "pipelab:ex05:", contains the user id and the
// field, and all of one user's keys share a slot while different users spread over the slots.
//
// The check asks for 1,000 users (user:0 .. user:999) x profile, cart, sessions and computes
// slots with Jedis's JedisClusterCRC16: keys distinct, one slot per user, and each third of
// the slots (0-5460, 5461-10922, 10923-16383, one master each in a cluster of three) gets
// 20-47% of the users. Then it writes 50 users with one MSET each and reads them back.
//
//   jbang ex05 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex05OneSlotPerUser.java (jbang ex05-solution).

public class Ex05OneSlotPerUser {

    public static void main(String[] args) {
        Ex05Check.ex05(args, Ex05OneSlotPerUser::userKey);
    }

    /** The key of one user's field: pipelab:ex05:..., all of a user's keys in one cluster slot. */
    static String userKey(String userId, String field) {
        // TODO: only the text between { and } is hashed: what must be inside for one user's keys to
        //       share a slot, and different users not to?
        throw new UnsupportedOperationException("TODO userKey: build the key with a hash tag");
    }
}
