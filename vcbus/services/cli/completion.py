"""``vcbus completion bash|zsh``: a shell completion script, as ``kubectl completion`` prints.

The script is made from the command line's own parser, so it offers what ``vcbus`` takes:
the commands, each command's verbs or kinds, and its options. Load it with
``source <(vcbus completion bash)`` (bash 4 or later), or ``source <(vcbus completion
zsh)``, which runs the same function through zsh's ``bashcompinit``.
"""

from __future__ import annotations

import argparse
import shlex

from vcbus.services.cli import build_parser, terminal

ROOT = "vcbus"


FILES = "<files>"
"""Said of a command path that takes a file: file names are offered too."""


def words(parser: argparse.ArgumentParser, path: str = ROOT) -> dict[str, list[str]]:
    """What may follow each command path (``vcbus``, ``vcbus job``, ...), from the parser.

    Sub-commands, then the choices of positional arguments, then options; :data:`FILES`
    when a positional argument is a file.
    """
    out: dict[str, list[str]] = {path: []}
    options: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out[path].append(name)
                out.update(words(sub, f"{path} {name}"))
        elif action.option_strings:
            options += [o for o in action.option_strings if o != "-h"]
        elif action.choices is not None:
            out[path] += [str(c) for c in action.choices]
        elif "file" in action.dest:
            out[path].append(FILES)
    out[path] += options
    return out


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion script of ``parser``."""
    found = words(parser)
    table = "\n".join(
        f"  [{shlex.quote(path)}]={shlex.quote(' '.join(w for w in following if w != FILES))}"
        for path, following in found.items()
    )
    files = " ".join(f"[{shlex.quote(path)}]=1" for path, w in found.items() if FILES in w)
    return f"""# vcbus completion for bash (bash 4 or later): source <(vcbus completion bash)
declare -A _vcbus_words=(
{table}
)
declare -A _vcbus_files=({files})
_vcbus() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" path={ROOT} i word
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${{COMP_WORDS[i]}}"
    [[ "$word" == -* ]] && continue
    [[ -n "${{_vcbus_words["$path $word"]+set}}" ]] && path="$path $word"
  done
  COMPREPLY=($(compgen -W "${{_vcbus_words["$path"]}}" -- "$cur"))
  if [[ "$cur" != -* && -n "${{_vcbus_files["$path"]+set}}" ]]; then
    COMPREPLY+=($(compgen -f -- "$cur"))
  fi
}}
complete -F _vcbus {ROOT}
"""


def zsh_script(parser: argparse.ArgumentParser) -> str:
    """The zsh completion script of ``parser``: the bash one, through ``bashcompinit``."""
    return (
        "#compdef vcbus\n"
        "# vcbus completion for zsh: source <(vcbus completion zsh)\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(parser)
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus completion``."""
    parser = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    parser.add_argument("shell", choices=("bash", "zsh"))
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the script for ``args.shell``."""
    parser = build_parser()
    terminal.write(bash_script(parser) if args.shell == "bash" else zsh_script(parser))
    return 0
