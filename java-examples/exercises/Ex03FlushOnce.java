///usr/bin/env jbang "$0" "$@" ; exit $?
//JAVA 17+
//DEPS io.lettuce:lettuce-core:7.7.0.RELEASE
//DEPS redis.clients:jedis:8.0.2
//DEPS org.slf4j:slf4j-simple:2.0.17
//JAVA_OPTIONS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
//SOURCES Ex03Check.java

// Exercise 3, "Flush once" (chapter 3, 'Lettuce: every connection is a pipeline already').
// Lettuce writes and flushes each command as it is issued. The check has turned that off on
// the connection (setAutoFlushCommands(false)), so commands wait in Lettuce's buffer until
// someone calls flushCommands(). Write queueAll so that it queues one SADD key member per
// member and returns the futures, WITHOUT flushing: the check flushes once, itself.
//
// The check uses 10,000 members: when queueAll returns, the set (read on another connection)
// must still be empty and no future done; after its flushCommands() every future must hold 1
// and the set 10,000 members. It reports the time from the flush to the last reply.
//
//   jbang ex03 [host] [port]     (defaults: 127.0.0.1 and the lab's port; needs a Redis with no keys but the lab's)
//
// Exit code 0 when solved, 1 while not (with a sentence saying why), 2 when Redis cannot be
// used. A solution: java-examples/solutions/Ex03FlushOnce.java (jbang ex03-solution).

import java.util.List;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.async.RedisAsyncCommands;

public class Ex03FlushOnce {

    public static void main(String[] args) {
        Ex03Check.ex03(args, Ex03FlushOnce::queueAll);
    }

    /** Queue SADD key member for each member; the futures in member order, nothing flushed. */
    static List<RedisFuture<Long>> queueAll(RedisAsyncCommands<String, String> async, String key,
                                            List<String> members) {
        // TODO: async.sadd(...) returns at once with a RedisFuture; collect one per member. Do not
        //       flush, do not wait on the futures: the check does both.
        throw new UnsupportedOperationException("TODO queueAll: queue one SADD per member");
    }
}
