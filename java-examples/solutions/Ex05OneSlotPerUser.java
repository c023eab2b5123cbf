///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES ../exercises/Ex05Check.java

// Solution of exercise 5, "One slot per user" (the task: java-examples/exercises/Ex05OneSlotPerUser.java).
//
//   jbang ex05-solution [host] [port]     (defaults: 127.0.0.1 and the lab's port)

public class Ex05OneSlotPerUser {

    public static void main(String[] args) {
        Ex05Check.ex05(args, Ex05OneSlotPerUser::userKey);
    }

    static String userKey(String userId, String field) {
        // The tag holds the user id and nothing else: one slot per user, users spread by CRC16.
        return "pipelab:ex05:{" + userId + "}:" + field;
    }
}
