"""The book's content, one module per chapter: its workloads, parameters, summaries, plots and
claims (pipelab.chapters.ch01 ... ch05). Notebooks import their chapter's module."""
