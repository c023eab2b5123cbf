"""The book build: the `pipelab` command line, notebook execution, the MkDocs hooks, the site's
tables and the link check. Notebooks never import it."""
