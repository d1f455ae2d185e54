"""What a page's cell shows, returned rather than displayed: markdown text, HTML, figures and
tables, in order. A notebook shows it as the cell's value (IPython's display protocol); a script
or a test reads `parts` and `text`."""

from __future__ import annotations


class Html(str):
    """A part that is HTML, not markdown."""


class Shown:
    def __init__(self, *parts):
        self.parts = tuple(p for p in parts if p is not None and not (isinstance(p, str) and not p))

    def __add__(self, other: "Shown") -> "Shown":
        return Shown(*self.parts, *other.parts)

    @property
    def text(self) -> str:
        """The markdown and HTML parts, one paragraph each."""
        return "\n\n".join(p for p in self.parts if isinstance(p, str))

    def __repr__(self) -> str:
        return f"Shown({', '.join(type(p).__name__ for p in self.parts)})"

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, Markdown, display

        for part in self.parts:
            if _is_frame(part):  # a table: a value it lacks reads "–", never NaN
                part = HTML(part.to_html(na_rep="–"))
            display(HTML(part) if isinstance(part, Html) else Markdown(part) if isinstance(part, str) else part)


def _is_frame(part) -> bool:
    return type(part).__name__ == "DataFrame" and hasattr(part, "to_html")
