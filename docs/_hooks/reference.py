"""MkDocs hook: the pages that say `<!-- generated: ... -->` get that part made from the code at build time.

`<!-- generated: commands -->` becomes the reference of every `plastic` command and option,
`<!-- generated: toil-options -->` the table of the Toil batch system's options
(both from plastic.cli.reference), so the reference cannot drift from `--help`.
"""

from plastic.cli.reference import command_reference, toil_option_reference

MARKERS = {
    "<!-- generated: commands -->": command_reference,
    "<!-- generated: toil-options -->": toil_option_reference,
}


def on_page_markdown(markdown, page, config, files):  # noqa: ARG001 (MkDocs' hook signature)
    for marker, make in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown
