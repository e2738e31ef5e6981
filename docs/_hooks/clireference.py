"""MkDocs hook: the command line reference is generated from the parser itself.

A page holding the marker ``<!-- cli-reference -->`` gets, in its place, one section per
``ek-agents`` command with its usage line and a table of every option and its help, read from
``ek_agents.cli.build_parser()``; a command or option added to the parser is in the docs at the
next build, and one removed is gone from them.
"""
from __future__ import annotations

import argparse

from ek_agents.cli import build_parser

MARKER = "<!-- cli-reference -->"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{o}`" for o in action.option_strings)
        if action.nargs != 0:
            names += f" `{action.metavar or action.dest.upper()}`"
        return names
    return f"`{action.metavar or action.dest}`"


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return ""
    if "%(default)" in text:
        text = text % {"default": action.default}
    if action.choices and "{" not in text:
        text += " (one of: " + ", ".join(str(c) for c in action.choices) + ")"
    return _cell(text)


def cli_reference() -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    out: list[str] = []
    for name, cmd in sub.choices.items():
        out += [f"### `ek-agents {name}`", "", _cell(helps.get(name) or ""), "",
                "```text", cmd.format_usage().strip(), "```", "",
                "| option | meaning |", "|---|---|"]
        for action in cmd._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            out.append(f"| {_option(action)} | {_help(action)} |")
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs' hook signature
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown
