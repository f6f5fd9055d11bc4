"""A griffe extension for the API reference. The project's docstrings end with `Example:` and an unindented doctest
block, which griffe's Google parser reads as prose (an admonition); titled `Examples:` and indented, the block
renders as code and output."""

import griffe


def _examples_section(docstring):
    lines, out, in_example = docstring.split("\n"), [], None
    for line in lines:
        if in_example is not None and not line.strip():
            in_example = None
        if in_example is not None:
            out.append(in_example + "    " + line[len(in_example):] if line.startswith(in_example) else line)
            continue
        if line.strip() == "Example:":
            in_example = line[: len(line) - len(line.lstrip())]
            out.append(in_example + "Examples:")
            continue
        out.append(line)
    return "\n".join(out)


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = _examples_section(obj.docstring.value)
