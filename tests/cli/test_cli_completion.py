"""``completion bash|zsh|tcsh`` prints a completion script generated from the parser
itself: bash, running it, completes the commands, sub-commands, options and choices of
the real command line; without the optional package shtab the command says what to
install and every other command still works.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph.checkpoint.sqlalchemy.cli import build_parser

PROG = "langgraph-checkpoint-sqlalchemy"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def commands() -> set[str]:
    """Every command and sub-command name of the parser."""
    names: set[str] = set()

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                names.update(action.choices)
                for child in action.choices.values():
                    walk(child)

    walk(build_parser())
    return names


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    done = cli("completion", "bash")
    assert done.returncode == 0, done.stderr
    path = tmp_path_factory.mktemp("completion") / "lgsa.bash"
    path.write_text(done.stdout)
    return path


def completed(script: Path, line: str) -> list[str]:
    """What bash offers on Tab at the end of ``line``, through the script's function."""
    program = f"""
source {script}
COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}
read -r -a COMP_WORDS <<< "$COMP_LINE"
[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMPREPLY=()
func=$(complete -p {PROG} | sed -E 's/.* -F ([^ ]+) .*/\\1/')
"$func"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(
        ["bash", "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_script_names_every_command(bash_script: Path) -> None:
    text = bash_script.read_text()
    missing = [name for name in commands() if name not in text]
    assert not missing
    assert f"complete -o bashdefault -F _shtab_langgraph_checkpoint_sqlalchemy {PROG}" in text


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
@pytest.mark.parametrize(
    ("line", "offered"),
    [
        (f"{PROG} threads ", ["list", "show", "delete"]),
        (f"{PROG} store ", ["list-namespaces", "stats", "sweep", "copy"]),
        (f"{PROG} st", ["stamp", "stats", "store"]),
        (f"{PROG} --v", ["--version"]),
        (f"{PROG} prune --strategy ", ["keep_latest", "delete"]),
        (f"{PROG} completion ", ["bash", "zsh", "tcsh"]),
    ],
)
def test_bash_completes_commands_and_choices(
    bash_script: Path, line: str, offered: list[str]
) -> None:
    assert completed(bash_script, line) == offered


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_bash_completes_each_command_s_own_options(bash_script: Path) -> None:
    export = completed(bash_script, f"{PROG} export --")
    assert {"--all", "--idle-for", "--output", "--no-progress", "--url"} <= set(export)
    assert "--strategy" not in export
    assert "--fast" in completed(bash_script, f"{PROG} stats --")


def test_zsh_and_tcsh_scripts() -> None:
    zsh = cli("completion", "zsh")
    assert zsh.returncode == 0, zsh.stderr
    assert zsh.stdout.startswith(f"#compdef {PROG}")
    assert "list-namespaces" in zsh.stdout and "--idle-for" in zsh.stdout
    if shutil.which("zsh"):
        checked = subprocess.run(["zsh", "-n"], input=zsh.stdout, text=True, check=False)
        assert checked.returncode == 0
    tcsh = cli("completion", "tcsh")
    assert tcsh.returncode == 0, tcsh.stderr
    assert f"complete {PROG}" in tcsh.stdout and "reindex-metadata" in tcsh.stdout


def test_unknown_shell_is_a_usage_error() -> None:
    done = cli("completion", "powershell")
    assert done.returncode == 2 and "invalid choice: 'powershell'" in done.stderr


def test_without_shtab_the_command_says_what_to_install_and_the_rest_works() -> None:
    blocked = (
        "import sys; sys.modules['shtab'] = None; "  # an import of shtab fails
        "from langgraph.checkpoint.sqlalchemy.cli import main; "
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked + "raise SystemExit(main(['completion', 'bash']))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: shell completion needs the package shtab, which is not installed. Install "
        f'it: the extra "completion": pip install "{PROG}[completion]" (from a checkout of '
        'the repository: pip install -e ".[completion]")\n'
    )
    helped = subprocess.run(
        [sys.executable, "-c", blocked + "main(['threads', 'list', '--help'])"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert helped.returncode == 0 and "examples:" in helped.stdout
