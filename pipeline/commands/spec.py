"""The one command-line table: the typer app and the typer-free fast path are both built from it.

``quick`` parses plain invocations of these commands without importing typer; ``typed`` turns the same
entries into typer commands (options, defaults, help) for everything else: help, completion, and every
usage error. This module imports nothing beyond memfold's ``frozen``, so the fast path stays cheap.
"""

from __future__ import annotations

from ..frozen import Frozen

# What a parameter holds: a text value, a path, an integer, an on/off flag, a repeatable text, or (the
# last positional argument only) every remaining word as a path.
KINDS = ("text", "path", "int", "flag", "repeat", "paths")


class Param(Frozen):
    """One option (``flags`` non-empty) or positional argument (``flags`` empty) of a command."""

    __slots__ = ("dest", "flags", "kind", "default", "help", "required", "metavar")
    dest: str
    flags: tuple[str, ...]
    kind: str
    default: object
    help: str
    required: bool
    metavar: str | None

    def __init__(self, dest: str, flags: tuple[str, ...], kind: str, default: object, help: str,
                 required: bool = False, metavar: str | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown parameter kind {kind!r}")
        self._set(dest=dest, flags=flags, kind=kind, default=default, help=help, required=required,
                  metavar=metavar)

    @property
    def positional(self) -> bool:
        return not self.flags


def opt(dest: str, *flags: str, kind: str = "text", default: object = None, help: str = "",
        required: bool = False) -> Param:
    return Param(dest, flags, kind, False if kind == "flag" else default, help, required)


def arg(dest: str, help: str = "", *, required: bool = True, kind: str = "text", metavar: str | None = None) -> Param:
    """A positional argument; ``kind="paths"`` (last only) takes every remaining word."""
    return Param(dest, (), kind, None, help, required, metavar)


class Command(Frozen):
    """A command: its parameters in order, the typer-free body that runs it, its help and its group."""

    __slots__ = ("name", "params", "body", "help", "panel")
    name: str
    params: tuple[Param, ...]
    body: str
    help: str
    panel: str

    def __init__(self, name: str, params: tuple[Param, ...], body: str, help: str, panel: str) -> None:
        self._set(name=name, params=params, body=body, help=help, panel=panel)


# The groups ``memfold --help`` shows commands in.
EVERYDAY, CONSOLIDATION, AUDIT, HOSTS, MAINTENANCE = "everyday", "consolidation", "audit", "hosts", "maintenance"

VERSION = opt("version", "--version", "-V", kind="flag", help="print the version and exit")
GLOBAL: tuple[Param, ...] = (
    opt("project", "--project", kind="path", help="project directory (default: the working directory)"),
    opt("home", "--home", kind="path", help="memfold home (default: $MEMFOLD_HOME or the user data dir)"),
    opt("json", "--json", kind="flag", help="print JSON for machines (errors too)"),
    opt("global_scope", "--global", kind="flag",
        help="the user-wide store (private, no mirror) instead of the project's"),
)

GLOBAL_OPT = opt("global_", "--global", kind="flag",
                 help="the user-wide store (private, no mirror) instead of the project's")
JSON_OPT = opt("json_out", "--json", kind="flag", help="print one JSON object for machines")
_MEMORY = (
    opt("type_", "--type", "-t", help="user | feedback | project | reference"),
    opt("visibility", "--visibility", help="safe (mirrored to .memory/) | private (default)"),
    opt("body", "--body", "-b", help="the memory text"),
    opt("body_file", "--body-file", kind="path", help="read the text from a file ('-' for stdin)"),
    opt("expires", "--expires", help="YYYY-MM-DD after which the memory is stale"),
    opt("cite", "--cite", kind="repeat",
        help="PATH[:A[-B]]: repository text the memory rests on, checked before each use (repeatable)"),
    GLOBAL_OPT, JSON_OPT,
    opt("allow_publish", "--allow-publish", kind="flag",
        help="let a safe memory carry the wording of another, private memory"),
)

COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("add", (arg("name", "a title in words (\"Deploy target\") or a file name (project_deploy-target)"),
                    opt("description", "--description", "-d", help="one self-contained line", required=True),
                    *_MEMORY),
            "memories:add", "Create a memory, or overwrite the one with exactly this name (keeping its created "
            "date).", EVERYDAY),
    Command("update", (arg("name", "the memory: its title, file name or slug"),
                       opt("description", "--description", "-d", help="one self-contained line"), *_MEMORY),
            "memories:update", "Change fields or the body of an existing memory.", EVERYDAY),
    Command("forget", (arg("name", "the memory: its title, file name or slug"), GLOBAL_OPT, JSON_OPT),
            "memories:forget", "Delete a memory from the private store and the mirror.", EVERYDAY),
    Command("list", (GLOBAL_OPT, JSON_OPT), "memories:list_memories", "List the memories of this project.",
            EVERYDAY),
    Command("show", (arg("name", "the memory: its title, file name or slug"), GLOBAL_OPT, JSON_OPT),
            "memories:show", "Print one memory.", EVERYDAY),
    Command("status", (GLOBAL_OPT, JSON_OPT), "overview:status",
            "Roots, counts, capacity, lock holder, last run and pending recovery.", EVERYDAY),
    Command("search", (arg("query", "words to find"),
                       opt("limit", "--limit", kind="int", default=20, help="at most this many results"),
                       GLOBAL_OPT, JSON_OPT),
            "memories:search", "Find memories by words in their name, description and body.", EVERYDAY),
    Command("consolidate", (
        opt("context", "--context", help="session transcript (JSON/JSONL; '-' for stdin)"),
        opt("no_context", "--no-context", kind="flag", help="consolidate without a session transcript"),
        opt("scope", "--scope", help="all | related (default: related with a context, else all)"),
        opt("select_", "--select", kind="repeat", help="consolidate exactly these memories (repeatable)"),
        opt("worker", "--worker", help="builtin, or a worker named in config.yaml (default: consolidate.worker)"),
        opt("allow_publish", "--allow-publish", kind="flag", help="let the plan make private memories safe"),
        opt("dry_run", "--dry-run", kind="flag", help="validate and show what would change; write nothing"),
        opt("unsafe_no_sandbox", "--unsafe-no-sandbox", kind="flag",
            help="run a third-party worker without an OS sandbox"),
        opt("all_projects", "--all-projects", kind="flag",
            help="visit every project home whose root still exists (cron, timers)"),
        opt("if_due", "--if-due", kind="flag", help="run only where consolidation is due (see `status`)"),
        opt("skip_if_locked", "--skip-if-locked", kind="flag",
            help="a project locked by another run is a logged skip, exit 0 (no wait)"),
        GLOBAL_OPT, JSON_OPT,
        opt("progress_json", "--progress-json", kind="flag",
            help="one JSON line per stage on stderr (for hosts that show progress)")),
        "consolidation:consolidate",
        "Consolidate the store: snapshot, sandboxed worker, validated plan, atomic apply, receipt.", CONSOLIDATION),
    Command("validate", (
        opt("run", "--run", help="check plan.json against manifest.json of this run"),
        opt("plan", "--plan", kind="path", help="a plan file (with --manifest)"),
        opt("manifest", "--manifest", kind="path", help="the run manifest the plan answers"),
        opt("repo", "--repo", kind="path", help="repository root for grounding paths (default: the project root)"),
        JSON_OPT),
        "checks:validate", "Run the plan validator alone and print its JSON result (exit 0 valid, 1 invalid).",
        CONSOLIDATION),
    Command("verify", (
        arg("target", "run id or receipt file (default: the newest run)", required=False),
        opt("attestation", "--attestation", kind="path", help="check a DSSE attestation from `memfold attest` instead"),
        opt("pubkey", "--pubkey", kind="path", help="Ed25519 public key (PEM) the attestation must verify with"),
        GLOBAL_OPT, JSON_OPT),
        "checks:verify",
        "Check a receipt against its plan bytes, manifest, chain link and (if newest) the files on disk.", AUDIT),
    Command("audit", (
        opt("strict", "--strict", kind="flag", help="hand edits (drift) and a missing or older chain head also fail"),
        GLOBAL_OPT, JSON_OPT),
        "checks:audit",
        "Walk the receipt chain and check it against the chain head in the mirror and in git; breaks exit 7.", AUDIT),
    Command("import", (arg("fmt", "pi-notes | pi-memory | claude | harness", metavar="FORMAT"),
                       arg("paths", "FILE, DIR, or (harness) PRIVATE PUBLIC", kind="paths"), JSON_OPT),
            "io:import_", "Import another tool's memory as one receipted transaction; importing twice adds nothing.",
            EVERYDAY),
    Command("export", (arg("fmt", "claude", metavar="FORMAT"), arg("dest", "the memory dir to write", kind="path"),
                       JSON_OPT),
            "io:export", "Write the private store as a Claude Code memory dir (memory files + MEMORY.md).", EVERYDAY),
    Command("sync", (
        opt("take", "--take", help="settle a conflict or held file: mine (your store wins) | theirs (the mirror's)"),
        arg("name", "the memory to settle (with --take)", required=False),
        opt("dry_run", "--dry-run", kind="flag", help="show what a sync would adopt, hold and leave; write nothing"),
        opt("quiet", "--quiet", "-q", kind="flag", help="print nothing unless something needs you (git hooks)"),
        JSON_OPT),
        "team:sync", "Adopt teammates' changes that git brought into the mirror; list held files and conflicts.",
        EVERYDAY),
    Command("mcp", (), "mcp_run:serve",
            "Run the MCP server on stdio (the project is --project or the working directory).", HOSTS),
)}

# Every other command's group; typed.py checks that each registered command has one.
PANELS: dict[str, str] = {
    **{name: c.panel for name, c in COMMANDS.items()},
    **dict.fromkeys(("init", "edit", "rename", "clear", "path", "help", "review"), EVERYDAY),
    **dict.fromkeys(("schedule", "undo"), CONSOLIDATION),
    **dict.fromkeys(("attest", "report"), AUDIT),
    **dict.fromkeys(("hooks", "trust", "untrust", "mirror", "inject"), HOSTS),
    **dict.fromkeys(("recover", "config", "bench", "demo", "doctor"), MAINTENANCE),
}
PANEL_ORDER = (EVERYDAY, CONSOLIDATION, AUDIT, HOSTS, MAINTENANCE)
