// Where the lab listens and how it names its keys, for an example run by hand: the harness passes
// host and port on the command line and PIPELAB_PREFIX in the environment, and `pipelab lab` exports
// PIPELAB_PORT for the examples a trainer runs. Both are declared once in Python (pipelab/settings.py,
// pipelab/server.py); this is the examples' one fallback when neither is given. It stays apart from
// LabSupport so that no chapter's inputs hold a port.

package pipelab;

/** In a package of its own, so that packaged examples (JMH's) can import it too. */
public final class LabDefaults {

    public static final String HOST = "127.0.0.1";

    private LabDefaults() {
    }

    /** PIPELAB_PREFIX when the harness set it (pipelab/server.py's PREFIX), else the lab's usual one. */
    public static String prefix() {
        String exported = System.getenv("PIPELAB_PREFIX");
        return exported == null || exported.isBlank() ? "pipelab:" : exported;
    }

    /** PIPELAB_PORT when the lab exported it, else the port of pipelab/settings.py. */
    public static int port() {
        String exported = System.getenv("PIPELAB_PORT");
        return exported == null || exported.isBlank() ? 16379 : Integer.parseInt(exported.trim());
    }
}
