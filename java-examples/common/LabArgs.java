// LabSupport's arguments: the five usual ones and what a chapter's notebook passes after them.
// Apart from LabSupport so that each file stays under 600 lines; the examples call it through LabSupport.

import pipelab.LabConnection;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

final class LabArgs {

    private LabArgs() {
    }

    static LabSupport.Settings parse(String example, String[] args, int defaultSize, int defaultRepeat) {
        return parse(example, args, defaultSize, defaultRepeat, LabConnection.get()); // malformed: exit code 2
    }

    static LabSupport.Settings parse(String example, String[] args, int defaultSize, int defaultRepeat,
                                     LabConnection url) {
        String usage = "usage: jbang " + example + " [host] [port] [size] [repeat] [warmup]"
                + " (defaults " + url.host() + " " + url.port() + " " + defaultSize + " "
                + defaultRepeat + " " + LabSupport.DEFAULT_WARMUP + ")";
        if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help"))) {
            System.out.println(usage);
            System.out.flush();
            System.exit(0);
        }
        if (args.length > 5) {
            throw new LabSupport.Stop(2, example + ": expected at most 5 arguments but got " + args.length + "; "
                    + usage + ".");
        }
        // Host and port: the arguments', else REDIS_URL's, else the lab's defaults.
        String host = args.length > 0 ? args[0].trim() : url.host();
        if (host.isEmpty()) {
            throw new LabSupport.Stop(2, example + ": host must not be empty; " + usage + ".");
        }
        int port = intArg(example, usage, args, 1, "port", url.port(), 1, 65_535);
        // Upper bounds only guard against typos that would exhaust memory or take hours.
        int size = intArg(example, usage, args, 2, "size", defaultSize, 1, 10_000_000);
        int repeat = intArg(example, usage, args, 3, "repeat", defaultRepeat, 1, 1_000);
        int warmup = intArg(example, usage, args, 4, "warmup", LabSupport.DEFAULT_WARMUP, 0, 1_000);
        return new LabSupport.Settings(example, host, port, size, repeat, warmup, url);
    }

    /**
     * A comma-separated list of whole numbers from 1 to 10,000,000 ("1,16,256"), as a chapter's notebook
     * passes its parameters after the five usual arguments; anything else stops with exit code 2.
     */
    static List<Integer> intList(String example, String name, String text) {
        List<Integer> out = new ArrayList<>();
        try {
            for (String part : text.split(",")) {
                int value = Integer.parseInt(part.trim().replace("_", ""));
                if (value < 1 || value > 10_000_000) {
                    throw new NumberFormatException(part);
                }
                out.add(value);
            }
        } catch (NumberFormatException e) {
            throw new LabSupport.Stop(2, example + ": " + name + " must be a comma-separated list of whole numbers from 1 "
                    + "to 10,000,000, not '" + text + "'.");
        }
        return List.copyOf(out);
    }

    /**
     * Another server named on the command line as host:port (a cluster node, a replicated master), as
     * LabSupport.Settings so that LabSupport's sentences name it; null for "-". `what` names it in the one-sentence
     * error, e.g. "cluster must be host:port of one cluster node". Reached with s's URL settings; a
     * cluster node takes its own (ClusterSupport.seedAt).
     */
    static LabSupport.Settings serverAt(LabSupport.Settings s, String text, String what) {
        if (text.strip().equals("-")) {
            return null;
        }
        int colon = text.lastIndexOf(':');
        try {
            String host = text.substring(0, colon).strip();
            int port = Integer.parseInt(text.substring(colon + 1).strip());
            if (!host.isEmpty() && port >= 1 && port <= 65_535) {
                return new LabSupport.Settings(s.example(), host, port, s.size(), s.repeat(), s.warmup(), s.url());
            }
        } catch (RuntimeException malformed) {
            // reported below
        }
        throw new LabSupport.Stop(2, s.example() + ": " + what + ", or - for none, not '" + text + "'.");
    }

    /** The arguments after the five usual ones (none if there are not more than five). */
    static String[] extra(String[] args) {
        return args.length > 5 ? Arrays.copyOfRange(args, 5, args.length) : new String[0];
    }

    /** The five usual arguments, without what a chapter's notebook passed after them. */
    static String[] usual(String[] args) {
        return args.length > 5 ? Arrays.copyOf(args, 5) : args;
    }

    private static int intArg(String example, String usage, String[] args, int index, String name,
                              int fallback, int min, int max) {
        if (args.length <= index) {
            return fallback;
        }
        String raw = args[index].trim().replace("_", "");
        try {
            int value = Integer.parseInt(raw);
            if (value >= min && value <= max) {
                return value;
            }
        } catch (NumberFormatException ignored) {
            // reported below, with the same sentence as an out-of-range value
        }
        throw new LabSupport.Stop(2, example + ": " + name + " must be an integer from " + min + " to " + max
                + ", not '" + args[index] + "'; " + usage + ".");
    }
}
