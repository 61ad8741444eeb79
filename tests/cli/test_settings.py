"""Settings: every option of every command takes its default from ./gpufabric.toml, then a
GPUFABRIC_<COMMAND>_<OPTION> variable over it, then the command line over both; a wrong file is a
located error (exit 2) and a secret is never read from the file or a variable (gpufabric/cli/settings.py)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.core import ParameterSource
from conftest import run_in_process

from gpufabric.cli import cli, settings
from gpufabric.errors import GpufabricError
from gpufabric.inputs import InputError

Chain = tuple[str, ...]  # a command's names under the root: ("lab", "up")

# Options whose callback takes a narrower form than their type says: three values each.
SAMPLES: dict[str, tuple[Any, Any, Any]] = {
    "listen": ("127.0.0.1:9101", "127.0.0.1:9102", "127.0.0.1:9103"),
    "since": ("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z", "2026-11-03T00:00:00Z"),
    "until": ("2026-11-04T00:00:00Z", "2026-11-05T00:00:00Z", "2026-11-06T00:00:00Z"),
    "owner": ("gf-a", "gf-b", "gf-c"),
    "prefix": ("a-", "b-", "c-"),
    "max_share": (0.1, 0.2, 0.3),
    "max_unit_share": (0.1, 0.2, 0.3),
    "hold_down": ("10s", "20s", "30s"),
    "alertmanager": ("http://127.0.0.1:9001", "http://127.0.0.1:9002", "http://127.0.0.1:9003"),
    "max_capacity_loss": ("10%", "20%", "30%"),
    "lab_name": ("file-lab", "env-lab", "cli-lab"),  # a lab name: lower-case letters, digits and -
}


def _tree() -> Iterator[tuple[Chain, click.Command]]:
    """Every command under the root (the root first), as `--help` would find them."""

    def walk(command: click.Command, ctx: click.Context, chain: Chain) -> Iterator[tuple[Chain, click.Command]]:
        yield chain, command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, click.Context(sub, parent=ctx, info_name=name), (*chain, name))

    yield from walk(cli, click.Context(cli, info_name="gpufabric"), ())


TREE = list(_tree())


def _values(param: click.Option) -> tuple[Any, Any, Any]:
    """Three values for the file, the environment and the command line, each unlike the one before."""
    if param.name in SAMPLES:
        return SAMPLES[param.name]
    kind = param.type
    if param.is_flag and not param.count:
        first = param.default is not True
        return first, not first, first
    if param.count:
        return 2, 1, 3
    if isinstance(kind, click.Choice):
        choices = [str(c) for c in kind.choices]
        if len(choices) == 1:  # one choice (`telemetry serve --jobs slurm`): the sources tell them apart
            return choices[0], choices[0], choices[0]
        return choices[0], choices[1], choices[0] if param.multiple else choices[1 % len(choices)]
    if isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        low = getattr(kind, "min", None) or 0
        step = 1 if isinstance(kind, click.types.IntParamType) else 1.5
        return low + step, low + 2 * step, low + 3 * step
    if not isinstance(kind, click.types.StringParamType | click.Path):  # a type of our own: numbers, if it takes them
        try:
            [kind.convert(v, param, None) for v in (1.5, 2.5, 3.5)]
        except click.BadParameter:
            pass
        else:
            return 1.5, 2.5, 3.5
    return f"file-{param.name}", f"env-{param.name}", f"cli-{param.name}"


def _file_value(param: click.Option) -> Any:
    return [_values(param)[0]] if param.multiple else _values(param)[0]


def _env_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _cli_args(param: click.Option) -> list[str]:
    value = _values(param)[2]
    if param.count:
        return [param.opts[0]] * value
    if param.is_flag:
        return [param.opts[0] if value else param.secondary_opts[0]]
    if param.multiple:  # two values on the command line, unlike the file's one
        other = _values(param)[1]
        return [param.opts[0], str(value), param.opts[0], str(other)]
    return [param.opts[0], str(value)]


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    return json.dumps(value)


def _env_name(chain: Chain, param: click.Option) -> str:
    """The documented rule, written out here rather than asked of click."""
    return "_".join(["GPUFABRIC", *(n.upper().replace("-", "_") for n in chain), (param.name or "").upper()])


def _positional(command: click.Command) -> list[str]:
    """A value for each required argument (in the working folder, for a path that must exist)."""
    args = []
    for p in command.params:
        if not isinstance(p, click.Argument) or not p.required:
            continue
        if isinstance(p.type, click.Choice):
            args.append(str(p.type.choices[0]))
        elif isinstance(p.type, click.Path) and p.type.exists and not p.type.file_okay:
            Path("arg-dir").mkdir(exist_ok=True)
            args.append("arg-dir")
        else:
            Path("arg-file").touch()
            args.append("arg-file")
    return args


def _context(chain: Chain, own_args: Callable[[Chain], list[str]]) -> click.Context:
    """The context of the command at `chain`, made as running it makes it: the root's first (it reads the
    settings), then each group's, each with its own options' arguments. Nothing runs."""
    command: click.Command = cli
    parent: click.Context | None = None
    for depth, name in enumerate(["gpufabric", *chain]):
        here = chain[:depth]
        args = own_args(here)
        if isinstance(command, click.Group):
            args = [
                *args,
                chain[depth] if depth < len(chain) else command.list_commands(parent or click.Context(cli))[0],
            ]
        else:
            args = [*args, *_positional(command)]
        ctx = command.make_context(name, args, parent=parent)
        if depth == len(chain):
            return ctx
        parent = ctx
        found = command.get_command(ctx, chain[depth])  # type: ignore[attr-defined]
        assert found is not None
        command = found
    raise AssertionError(chain)


def _clear_named_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for _chain, command in TREE:
        for param in settings.settable(command).values():
            for name in [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ()):
                monkeypatch.delenv(name, raising=False)


def test_every_option_of_every_command_takes_the_file_then_the_environment_then_the_command_line(tmp_path, monkeypatch):
    """The whole command tree: for every option of every command, a value in gpufabric.toml is the
    option's value; a GPUFABRIC_<COMMAND>_<OPTION> variable wins over it; the command line over both."""
    _clear_named_variables(monkeypatch)  # GPUFABRIC_AUDIT_LOG (the tests' own), GPUFABRIC_SOT_URL, ...
    monkeypatch.chdir(tmp_path)
    options = {chain: settings.settable(command) for chain, command in TREE}
    assert sum(map(len, options.values())) > 400  # the tree was walked, lazily loaded groups and all
    lines = [f"{name} = {_toml(_file_value(p))}" for name, p in options[()].items()]
    for chain, found in options.items():
        if chain and found:
            lines += ["", f"[{'.'.join(chain)}]"]
            lines += [
                f"{name} = {_toml([_values(p)[0]] if p.multiple else _values(p)[0])}" for name, p in found.items()
            ]
    (tmp_path / "gpufabric.toml").write_text("\n".join(lines) + "\n")
    for found in options.values():  # the paths an option wants to exist
        for param in found.values():
            if isinstance(param.type, click.Path) and param.type.exists:
                for value in _values(param):
                    (tmp_path / value).mkdir(exist_ok=True) if not param.type.file_okay else (tmp_path / value).touch()

    def check(stage: int, source: ParameterSource, own_args: Callable[[Chain], list[str]]) -> None:
        for chain, found in options.items():
            ctx = _context(chain, own_args)
            for name, param in found.items():
                value = _values(param)[stage]
                if stage == 0:
                    raw: Any = [value] if param.multiple else value
                elif stage == 1:
                    raw = param.type.split_envvar_value(_env_text(value)) if param.multiple else _env_text(value)
                else:
                    raw = [value, _values(param)[1]] if param.multiple else value
                where = f"{' '.join(chain) or 'gpufabric'} {name}"
                assert ctx.get_parameter_source(name) == source, where
                assert ctx.params[name] == param.process_value(ctx, raw), where

    check(0, ParameterSource.DEFAULT_MAP, lambda _chain: [])
    for chain, found in options.items():
        for param in found.values():
            monkeypatch.setenv(_env_name(chain, param), _env_text(_values(param)[1]))
    check(1, ParameterSource.ENVIRONMENT, lambda _chain: [])
    check(
        2,
        ParameterSource.COMMANDLINE,
        lambda chain: [a for p in options[chain].values() for a in _cli_args(p)],
    )


def test_the_variables_options_already_named_keep_working_and_come_before_the_generic_name(tmp_path, monkeypatch):
    _clear_named_variables(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpufabric.toml").write_text('[sot.push]\nurl = "https://file.example"\n')
    monkeypatch.setenv("GPUFABRIC_SOT_PUSH_URL", "https://generic.example")
    assert _context(("sot", "push"), lambda _c: []).params["url"] == "https://generic.example"
    monkeypatch.setenv("GPUFABRIC_SOT_URL", "https://named.example")
    ctx = _context(("sot", "push"), lambda _c: [])
    assert ctx.params["url"] == "https://named.example"
    assert settings.where(ctx, settings.settable(ctx.command)["url"]) == ("env", "GPUFABRIC_SOT_URL")
    monkeypatch.setenv("GPUFABRIC_AUDIT_LOG", str(tmp_path / "named.jsonl"))
    monkeypatch.setenv("GPUFABRIC_LOG_LEVEL", "debug")
    assert str(_context(("audit",), lambda _c: []).params["audit_log"]) == str(tmp_path / "named.jsonl")
    assert _context((), lambda _c: []).params["log_level"] == "debug"


def test_version_help_and_the_hidden_verbose_are_no_settings(tmp_path):
    """--version and every subcommand's hidden -v are not read from GPUFABRIC_VERSION / GPUFABRIC_PLAN_VERBOSE."""
    done = run_in_process("gpufabric", "config", "show", "plan", cwd=tmp_path, GPUFABRIC_VERSION="1",
                          GPUFABRIC_PLAN_VERBOSE="3")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "version" not in done.stdout and "verbose" not in done.stdout.split("[plan]")[1]
    from gpufabric.cli import VERBOSE

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        patch.setenv("GPUFABRIC_PLAN_VERBOSE", "2")  # the hidden -v's callback would count it
        assert _context(("plan",), lambda _c: []).meta.get(VERBOSE, 0) == 0
    (tmp_path / "gpufabric.toml").write_text("[plan]\nverbose = 2\n")
    done = run_in_process("gpufabric", "plan", cwd=tmp_path)
    assert done.returncode == 2
    assert "gpufabric.toml:2: plan.verbose: is no option of `gpufabric plan`" in done.stderr
    assert "set verbose at the top of the file" in done.stderr


BAD_FILES = [
    # (file text, the located error's first line, what would be right)
    ("[pusj]\ntimeout = 3\n", "gpufabric.toml:1: pusj: is no command of `gpufabric`", "did you mean push?"),
    (
        '[push]\nknown-hosts = "k"\n',
        "gpufabric.toml:2: push.known-hosts: is no option of `gpufabric push`",
        "write known_hosts (the option's name, with underscores)",
    ),
    ("[push]\njson = true\n", "gpufabric.toml:2: push.json: is no option", "the key of --json is as_json"),
    (
        '[push]\n\ntimeout = "45"\n',
        "gpufabric.toml:3: push.timeout: is a string; --timeout takes a whole number",
        "timeout = 3",
    ),
    (
        "[push]\nbatch_size = 2.5\n",
        "gpufabric.toml:2: push.batch_size: is a number; --batch takes a whole number",
        "batch_size = 3",
    ),
    (
        "[push]\ntimeout = 0\n",
        "gpufabric.toml:2: push.timeout: 0 is not in the range 1<=x<=300",
        "what --timeout takes (see --help)",
    ),
    (
        '[push]\ndrain = "sometimes"\n',
        "gpufabric.toml:2: push.drain: 'sometimes' is not one of",
        "one of: auto, always, never",
    ),
    (
        '[push]\ndevices = "leaf1"\n',
        "gpufabric.toml:2: push.devices: is a string; --device takes several values",
        "devices = [...]",
    ),
    (
        '[push]\ndry_run = "yes"\n',
        "gpufabric.toml:2: push.dry_run: is a string; --dry-run takes true or false",
        "true or false",
    ),
    ("[push]\nfile = 'a.yml'\n", "gpufabric.toml:2: push.file: is no option", "FILE is an argument"),
    ("push = 3\n", "gpufabric.toml:1: push: is a command: its settings are a table", "write [push]"),
    (
        "[lab.up]\nstate_dir = 1\n",
        "gpufabric.toml:2: lab.up.state_dir: is a whole number; --state-dir takes a string",
        'state_dir = "..."',
    ),
    (
        '[telemetry]\n[telemetry.alertmanager]\n\n# a comment\ngroup_wait = ["10s"]\n',
        "gpufabric.toml:5: telemetry.alertmanager.group_wait: is a list",
        'group_wait = "..."',
    ),
    (
        '[lab.hosts.up]\nprefix = "m-"\nrouter = ["r"]\n',
        "gpufabric.toml:3: lab.hosts.up.router: is a list",
        'router = "..."',
    ),
    (
        '[sot.push]\ntoken = "t"\n',
        "gpufabric.toml:2: sot.push.token: is no option of `gpufabric sot push`",
        "did you mean token_env?",
    ),
    ('[export]\nkind = "cabling"\n', "gpufabric.toml:2: export.kind: is no option", "KIND is an argument"),
    ("[push]\ncheck_timeout = nan\n", "gpufabric.toml:2: push.check_timeout: is nan, not a number", "= 1.5"),
    ("[push]\ntimeout = \n", "gpufabric.toml:2: (top level): is not valid TOML", "fix the TOML at the line shown"),
    ('text = """\n[push]\ntimeout = 3\n"""\nlog_level = 7\n', "gpufabric.toml:1: text: is no option", ""),
]


@pytest.mark.parametrize(("text", "error", "hint"), BAD_FILES, ids=[b[1].split(": ")[1] for b in BAD_FILES])
def test_a_wrong_settings_file_is_a_located_error(tmp_path, text, error, hint):
    (tmp_path / "gpufabric.toml").write_text(text)
    headers = re.findall(r"^\[([a-z.-]+)\]", text, re.MULTILINE)
    command = headers[-1].split(".") if headers else ["push"]
    done = run_in_process("gpufabric", *command, "--help", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert f"error: {error}" in done.stderr
    fix = next(line for line in done.stderr.splitlines() if line.startswith("  fix: "))
    assert hint in fix
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_value_a_callback_refuses_says_which_line_gave_it(tmp_path):
    (tmp_path / "gpufabric.toml").write_text('[remediate.serve]\n\nlisten = "nonsense"\n')
    done = run_in_process("gpufabric", "remediate", "serve", cwd=tmp_path)
    assert done.returncode == 2
    assert "not 'nonsense' (from gpufabric.toml:3, key remediate.serve.listen)" in done.stderr
    done = run_in_process("gpufabric", "push", cwd=tmp_path, GPUFABRIC_PUSH_TIMEOUT="soon")
    assert done.returncode == 2
    assert "'soon' is not a valid integer range. (from the environment variable GPUFABRIC_PUSH_TIMEOUT)" in done.stderr


def test_pyproject_holds_the_settings_in_tool_gpufabric_and_not_beside_gpufabric_toml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.gpufabric.push]\ntimeout = 45\n')
    ctx = _context(("push",), lambda _c: [])
    assert ctx.params["timeout"] == 45
    assert settings.where(ctx, settings.settable(ctx.command)["timeout"]) == ("file", "pyproject.toml:5")
    (tmp_path / "pyproject.toml").write_text("[tool.gpufabric.push]\ntimeuot = 45\n")
    with pytest.raises(InputError, match=r"pyproject.toml:2: tool.gpufabric.push.timeuot: is no option"):
        _context(("push",), lambda _c: [])
    (tmp_path / "gpufabric.toml").write_text("[push]\ntimeout = 40\n")
    with pytest.raises(InputError, match=r"settings are in gpufabric\.toml too"):
        _context(("push",), lambda _c: [])
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "gpufabric-user"\n')  # no table: not ours
    assert _context(("push",), lambda _c: []).params["timeout"] == 40


def test_a_settings_file_others_may_write_is_refused(tmp_path):
    file = tmp_path / "gpufabric.toml"
    file.write_text('[push]\njump_host = "their-host"\n')
    file.chmod(0o666)
    done = run_in_process("gpufabric", "config", "show", "push", cwd=tmp_path)
    assert done.returncode == 2
    assert "gpufabric.toml: (top level): is writable by others (mode 0666)" in done.stderr
    assert "fix: chmod o-w gpufabric.toml" in done.stderr


# --- secrets --------------------------------------------------------------------------------------

SECRET_WORDS = ("password", "token", "secret", "community", "api_key", "credential")


def test_every_option_that_names_a_secret_takes_a_reference_to_it():
    """Today no option takes a secret's value: those that mention one name a variable or a file."""
    named = {
        (chain, name)
        for chain, command in TREE
        for name, param in settings.settable(command).items()
        if any(word in name for word in SECRET_WORDS)
    }
    assert {name for _chain, name in named} == {
        "vault_password_file", "k8s_token_env", "token_env", "webhook_token_file", "token_file",
    }  # fmt: skip
    assert not [n for c, n in named if settings.is_secret(settings.settable(dict(TREE)[c])[n])]


@click.command("login")
@click.option("--password")
@click.option("--password-file")
@click.option("--api-token")
def _login(**_kw: Any) -> None:
    """A command with options carrying secrets, as a future one might."""


def test_an_option_carrying_a_secret_is_refused_in_the_file_and_the_environment(monkeypatch):
    settings.adopt(_login)
    origin = settings.Origin("gpufabric.toml", {("login",): 1, ("login", "password"): 3})
    table = settings.Table({"password_file": "/run/pw", "password": "hunter2", "api_token": "t0k"}, origin, ("login",))
    with pytest.raises(InputError) as caught:
        _login.make_context("login", [], default_map=table, auto_envvar_prefix="GPUFABRIC_LOGIN")
    shown = caught.value.render()
    assert "gpufabric.toml:3: login.password: --password carries a secret, which a settings file never holds" in shown
    assert "login.api_token: --api-token carries a secret" in shown
    assert "password_file" not in shown and "hunter2" not in shown and "t0k" not in shown
    monkeypatch.setenv("GPUFABRIC_LOGIN_PASSWORD", "hunter2")
    with pytest.raises(GpufabricError, match="GPUFABRIC_LOGIN_PASSWORD would give --password a secret's value") as env:
        _login.make_context("login", [], auto_envvar_prefix="GPUFABRIC_LOGIN")
    assert "hunter2" not in str(env.value)
    monkeypatch.delenv("GPUFABRIC_LOGIN_PASSWORD")
    ctx = _login.make_context("login", ["--password", "hunter2"], auto_envvar_prefix="GPUFABRIC_LOGIN")
    assert ctx.params["password"] == "hunter2"  # the command line may still give it


def test_config_show_never_prints_the_value_of_an_option_carrying_a_secret():
    from gpufabric.cli import config_cmd

    settings.adopt(_login)
    ctx = _login.make_context("login", ["--password", "hunter2", "--password-file", "/run/pw"])
    section = config_cmd._section(ctx)
    rows = {row["key"]: row for row in section["options"]}
    assert rows["password"]["value"] is None and rows["password"]["secret"] is True
    assert rows["password_file"]["value"] == "/run/pw" and "secret" not in rows["password_file"]
    text = config_cmd._text(None, [section])
    assert "hunter2" not in text and "# password = (a secret: not shown)" in text


def test_a_url_with_a_password_is_refused_in_the_file_and_the_environment_and_never_shown(tmp_path):
    (tmp_path / "gpufabric.toml").write_text('[scheduler.status]\nk8s_api = "https://admin:hunter2@10.0.0.1:6443"\n')
    done = run_in_process("gpufabric", "config", "show", cwd=tmp_path)
    assert done.returncode == 2
    assert "gpufabric.toml:2: scheduler.status.k8s_api: is a URL with a password in it" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout
    (tmp_path / "gpufabric.toml").unlink()
    done = run_in_process(
        "gpufabric", "sot", "push", cwd=tmp_path, GPUFABRIC_SOT_PUSH_URL="https://u:hunter2@127.0.0.1"
    )
    assert done.returncode == 2
    assert "error: GPUFABRIC_SOT_PUSH_URL holds a URL with a password in it" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout
    url = "https://u:hunter2@127.0.0.1"
    done = run_in_process("gpufabric", "config", "show", "--json", "sot", "push", "--url", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout
    url = next(o for o in json.loads(done.stdout)["commands"][0]["options"] if o["key"] == "url")
    assert url["value"] == "https://u:***@127.0.0.1" and url["source"] == "command line"


def test_no_options_variable_is_a_variable_gpufabric_reads_for_something_else():
    """The variables gpufabric, its scripts and its Ansible plugins read for other ends (the secrets the
    intent names, the inventory's jump host) are never an option's generic name, unless the option
    itself named that variable."""
    root = Path(__file__).resolve().parents[2]
    mine = {root / "gpufabric" / "cli" / "settings.py"}  # its docstring writes generic names out
    used: set[str] = set()
    for folder in ("gpufabric", "scripts", "plugins", "roles"):
        for path in (root / folder).rglob("*"):
            if path.suffix in {".py", ".sh", ".yml"} and path.is_file() and path not in mine:
                used |= set(re.findall(r"\bGPUFABRIC_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(errors="replace")))
    assert {"GPUFABRIC_SWITCH_PASSWORD", "GPUFABRIC_SOT_TOKEN", "GPUFABRIC_JUMP_HOST", "GPUFABRIC_DEBUG"} <= used
    named = {n for _c, command in TREE for p in settings.settable(command).values() for n in [p.envvar] if n}
    generic = {_env_name(chain, p) for chain, command in TREE for p in settings.settable(command).values()}
    assert (used - named) & generic == set()


# --- config show --------------------------------------------------------------------------------------


def test_config_show_says_where_every_value_came_from(tmp_path):
    (tmp_path / "gpufabric.toml").write_text(
        'log_level = "info"\n\n[push]\n# the bastion\njump_host = "bastion.example"\ntimeout = 20\n'
        'known_hosts = "~/.ssh/known_hosts"\n\n[lab.up]\nhosts = false\n'
    )
    env = {"GPUFABRIC_PUSH_TIMEOUT": "25", "GPUFABRIC_LOG_LEVEL": "error"}
    done = run_in_process("gpufabric", "config", "show", "--json", "push", "--timeout", "30", cwd=tmp_path, **env)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["settings_file"] == "gpufabric.toml"
    assert [c["command"] for c in shown["commands"]] == ["gpufabric push"]
    rows = {o["key"]: o for o in shown["commands"][0]["options"]}
    assert (rows["timeout"]["value"], rows["timeout"]["source"]) == (30, "command line")
    assert (rows["jump_host"]["value"], rows["jump_host"]["from"]) == ("bastion.example", "gpufabric.toml:5")
    assert rows["known_hosts"]["value"] == os.path.expanduser("~/.ssh/known_hosts")
    assert (rows["dry_run"]["value"], rows["dry_run"]["source"]) == (False, "default")
    assert rows["audit_log"]["env"] == ["GPUFABRIC_AUDIT_LOG", "GPUFABRIC_PUSH_AUDIT_LOG"]
    done = run_in_process("gpufabric", "config", "show", cwd=tmp_path, **env)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert '\nlog_level = "error"  # --log-level: env GPUFABRIC_LOG_LEVEL\n' in text
    assert "[lab.up]  # gpufabric lab up\n" in text and "hosts = false" in text
    assert "# --hosts: file gpufabric.toml:10" in text
    assert "timeout = 25" in text and "# --timeout: env GPUFABRIC_PUSH_TIMEOUT" in text
    assert "[sot.push]  # gpufabric sot push" in text and "[telemetry.alertmanager]" in text
    assert "# plane: not set" in text


def test_config_show_marks_a_variable_its_option_refuses(tmp_path):
    done = run_in_process("gpufabric", "config", "show", "push", cwd=tmp_path, GPUFABRIC_PUSH_TIMEOUT="soon")
    assert done.returncode == 2
    assert "# timeout: 'soon' is not a valid integer range." in done.stdout


# --- the locator ---------------------------------------------------------------------------------


def test_key_lines_places_headers_dotted_and_quoted_keys_and_skips_multiline_strings():
    text = "\n".join([
        "top = 1",                      # 1
        '[push]  # comment',            # 2
        "a.b = 2",                      # 3
        '"quoted key" = 3',             # 4
        'note = """',                   # 5
        "fake = 4",                     # 6
        '"""',                          # 7
        "[ 'lab' . up ]",               # 8
        "state_dir = '/x'",             # 9
        "list = [",                     # 10
        '  "x = 1",',                   # 11
        "]",                            # 12
    ])  # fmt: skip
    lines = settings.key_lines(text)
    assert lines[("top",)] == 1 and lines[("push",)] == 2
    assert lines[("push", "a", "b")] == 3 and lines[("push", "a")] == 3
    assert lines[("push", "quoted key")] == 4 and lines[("push", "note")] == 5
    assert ("push", "fake") not in lines
    assert lines[("lab", "up")] == 8 and lines[("lab", "up", "state_dir")] == 9
    assert ("lab", "up", "x") not in lines and len(lines) == 9


def test_a_settings_file_is_read_as_outside_input(tmp_path):
    os.mkfifo(tmp_path / "gpufabric.toml")
    done = run_in_process("gpufabric", "check", cwd=tmp_path)
    assert done.returncode == 2 and "is a FIFO, not a regular file (expected a settings file)" in done.stderr
    (tmp_path / "gpufabric.toml").unlink()
    (tmp_path / "gpufabric.toml").write_bytes(b"[push]\njump_host = '\xff'\n")
    done = run_in_process("gpufabric", "check", cwd=tmp_path)
    assert done.returncode == 2 and "gpufabric.toml:2" in done.stderr and "not UTF-8" in done.stderr


def test_nothing_is_read_without_a_settings_file(tmp_path):
    """No file, no table of ours in pyproject.toml: the built-in defaults, and no settings file shown."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    done = run_in_process("gpufabric", "config", "show", "--json", "push", cwd=tmp_path, GPUFABRIC_AUDIT_LOG="")
    shown = json.loads(done.stdout)
    assert shown["settings_file"] is None
    assert {o["source"] for o in shown["commands"][0]["options"]} == {"default"}
    assert Path(tmp_path / "pyproject.toml").exists()


def test_config_show_reads_the_words_after_a_command_as_that_command_does(tmp_path):
    done = run_in_process("gpufabric", "config", "show", "push", "--no-such-option", cwd=tmp_path)
    assert done.returncode == 2 and "No such option '--no-such-option'" in done.stderr
    done = run_in_process("gpufabric", "config", "show", "lab", "hosts", "up", "--prefix", "XX", cwd=tmp_path)
    assert done.returncode == 2 and "Invalid value for '--prefix'" in done.stderr
    done = run_in_process("gpufabric", "config", "show", "lab", "hosts", "up", "--prefix", "m-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # --router is required, and shown as not set
    assert 'prefix = "m-"' in done.stdout and "# router: not set" in done.stdout
