"""The two kinds of marker the prose holds, read by the site hooks and by `pipelab reference`.

A block marker, an HTML comment the hooks replace with a table or a plot:
  <!-- pipelab:figures ch01 -->, <!-- pipelab:env ch01 -->, <!-- pipelab:plot ch01/name -->,
  <!-- pipelab:spread all -->, <!-- pipelab:course timings -->,
  <!-- pipelab:yourrun plot --> (a section of the "Your run" page, yourrun.SECTIONS)

A value marker, one figure of a results file. Bare: {{ ch01/ping-10k#python_speedup }}, in backticks for
a code figure. As `pipelab reference` writes it: <span><!--{{ ch01/ping-10k#python_speedup }}-->17.6x</span>,
where GitHub shows the reference's value and hides the comment (a span, unlike a comment, may open a
line without ending the paragraph there); a code figure keeps its backticks around the value.

A condition, the direction or size a sentence states, judged by conditions.py on the run shown:
  <!--holds: ch07/variadic#get_cpu_ratio > 1 -->
It follows its sentence on the same line, never opening one: on GitHub a line that opens with a
comment ends the paragraph.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

BLOCK = re.compile(r"<!--\s*pipelab:(figures|env|plot|spread|course|yourrun|remember)\s+([\w/.-]+)\s*-->")

VALUE = re.compile(
    r"<span><!--\{\{\s*(?P<name>[\w/.-]+)#(?P<key>\w+)\s*\}\}-->"
    r"(?P<code>`?)(?P<shown>.*?)(?P=code)</span>"
    r"|(?P<bare_code>`?)\{\{\s*(?P<bare_name>[\w/.-]+)#(?P<bare_key>\w+)\s*\}\}(?P=bare_code)"
)

CONDITION = re.compile(r"<!--holds:(?P<condition>.*?)-->", re.DOTALL)


@dataclass(frozen=True)
class Value:
    name: str  # results name, "ch01/ping-10k"
    key: str  # summary key
    code: bool  # shown as code

    def markdown(self, text: str) -> str:
        """`text` (a figure's text) as this marker shows it: a measured text may hold "|" (a list of
        results), which would split a table cell, and "<" (an error's "<addr>"), which outside code
        would read as an HTML tag and vanish."""
        if not self.code:
            text = html.escape(text, quote=False)
        text = text.replace("|", "\\|")
        tick = "`" if self.code else ""
        return f"{tick}{text}{tick}"

    def written(self, text: str) -> str:
        """The marker as `pipelab reference` writes it, showing `text`."""
        return f"<span><!--{{{{ {self.name}#{self.key} }}}}-->{self.markdown(text)}</span>"


def value(match: re.Match) -> Value:
    if match["name"]:
        return Value(match["name"], match["key"], bool(match["code"]))
    return Value(match["bare_name"], match["bare_key"], bool(match["bare_code"]))


def values(markdown: str) -> list[Value]:
    return [value(match) for match in VALUE.finditer(markdown)]
