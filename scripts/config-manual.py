#!/usr/bin/env python3
"""Writes the CONFIGURATION section of tonearmd(8), in mdoc, from config/tonearmd.toml: every
table, every key with its default, and the comment above it, so the manual says what the file
the package installs says. Usage: config-manual.py config/tonearmd.toml > section.mdoc"""
import re
import sys


def escape(text):
    # A line of text must not start with a dot or an apostrophe (a roff request); backslashes are
    # roff escapes.
    text = text.replace("\\", "\\e")
    return ("\\&" + text) if text[:1] in (".", "'") else text


def main(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    out = [".Sh CONFIGURATION",
           "The daemon reads",
           ".Pa /etc/tonearm/tonearmd.toml",
           "(TOML). Every key is optional; a missing key takes the default shown. Command-line",
           "options and",
           ".Ev TONEARM_*",
           "environment variables take precedence over the file."]
    comment = []
    in_list = False
    # The file's own opening paragraph (precedence) is said above in the manual's words.
    while lines and lines[0].startswith("#"):
        lines.pop(0)

    def close_list():
        nonlocal in_list
        if in_list:
            out.append(".El")
            in_list = False

    for line in lines:
        stripped = line.strip()
        table = re.fullmatch(r"\[([a-z_]+)\]", stripped)
        key = re.fullmatch(r"#?\s*([a-z_]+)\s*=\s*(.+)", stripped)
        if table:
            close_list()
            out.append(".Ss [%s]" % table.group(1))
            for text in comment:
                out.append(escape(text))
            comment = []
        elif key and (not stripped.startswith("#") or comment):
            if not in_list:
                out.append(".Bl -tag -width Ds")
                in_list = True
            name, value = key.group(1), key.group(2)
            # A double quote would quote a macro argument: \(dq prints one.
            shown = "(unset)" if stripped.startswith("#") else escape(value).replace('"', "\\(dq")
            out.append(".It Cm %s Li = %s" % (name, shown))
            if comment:
                out.extend(escape(text) for text in comment)
            comment = []
        elif stripped.startswith("#"):
            text = stripped.lstrip("#").strip()
            if text:
                comment.append(text)
        elif not stripped:
            # A comment followed by a blank line belongs to no key: it introduces what follows.
            if comment and not in_list:
                out.extend(escape(text) for text in comment)
                comment = []
    close_list()
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
