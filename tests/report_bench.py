"""Benchmark (not a timed test): the report over a synthetic chain of 1,000 receipts touching 20,000 memories.

Run: ``python tests/report_bench.py OUT_DIR``. Each receipt creates 20 memories (the text of every one is
on disk, in its run's backup or plan), every 25th folds the store down to 50, so the per-run details
hold 20,000 created memories and about 19,000 deleted ones, each with its text and diff.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pipeline.fsutil import sha256_bytes
from pipeline.paths import make_layout
from pipeline.paths.ondisk import ensure_layout
from pipeline.receipts.log import log_name
from pipeline.receipts.receipt import build_receipt
from pipeline.receipts.report import write_report
from pipeline.store.jsontext import digest_json
from pipeline.store.state import Limits


def _memory(i: int) -> bytes:
    return (f"---\nname: project_m{i:05d}\ndescription: synthetic memory {i}\ntype: project\nvisibility: "
            f"{'safe' if i % 3 else 'private'}\ncreated: 2026-11-30\n---\nFact {i} about the build.\n"
            f"Second line of memory {i}.\n").encode()


def build(home: Path, project: Path, receipts: int = 1000, per: int = 20) -> None:
    layout = make_layout(home, project)
    ensure_layout(layout)
    harness: dict[str, str] = {}
    public: dict[str, str] = {}
    previous = None
    counter = 0
    for seq in range(1, receipts + 1):
        run_id = f"20261130T{seq // 3600:02d}{seq // 60 % 60:02d}{seq % 60:02d}Z-{seq:08x}"
        source = {"harness": dict(harness), "public": dict(public)}
        ops = []
        run_dir = layout.runs / run_id
        (run_dir / "backup").mkdir(parents=True)
        if seq % 25 == 0:
            for name in sorted(harness)[:-50]:
                (run_dir / "backup" / f"harness.{name}").write_bytes(_memory(int(name[9:14])))
                ops.append({"name": name, "kind": "delete", "classification": None, "contentSha256": None})
                harness.pop(name)
                public.pop(name, None)
        else:
            for _ in range(per):
                counter += 1
                data = _memory(counter)
                name = f"project_m{counter:05d}.md"
                harness[name] = sha256_bytes(data)
                if counter % 3:
                    public[name] = harness[name]
                ops.append({"name": name, "kind": "create", "classification": None,
                            "contentSha256": harness[name], "content": data.decode()})
        plan = json.dumps({"operations": ops}).encode()
        (run_dir / "plan.json").write_bytes(plan)
        receipt = build_receipt(phase="post", run_id=run_id, scope_key=layout.scope_key, scope_digest="0" * 64,
                                artifact_hash="0" * 64, plan_digest=sha256_bytes(plan), selected=[],
                                source_hashes=source, final_hashes={"harness": dict(harness), "public": dict(public)},
                                operations=[{k: v for k, v in o.items() if k != "content"} for o in ops],
                                worker={"kind": "parent"}, sandbox={"kind": "none", "reason": "synthetic"},
                                created_at="2026-11-30T12:00:00Z", previous=previous, command="add")
        (layout.receipts / log_name(seq, run_id)).write_text(json.dumps(receipt))
        previous = digest_json(receipt)


def main(out: Path) -> None:
    home, project = out / "home", out / "project"
    project.mkdir(parents=True)
    started = time.perf_counter()
    build(home, project)
    built = time.perf_counter()
    written = write_report(make_layout(home, project), Limits(), public=False, since=None,
                           out=out / "report.html", now="2026-11-30T12:00:00Z")
    done = time.perf_counter()
    print(json.dumps({"build_s": round(built - started, 2), "report_s": round(done - built, 2),
                      "bytes": written.path.stat().st_size, "receipts": written.receipts}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
