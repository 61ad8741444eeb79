"""What parsing candidates side by side in threads costs, against one after another: the CPU per parse
of a 32k leaf's NVUE candidate (the Cumulus driver's check, libyaml's loader) in 1, 8, 40 and 80
threads, at the interpreter's default switch interval (5 ms) and at the one the fleet's forked
readers use (gpufabric.fleet.runner.READER_SWITCH_INTERVAL).

    python -m bench.profiling.parse_threads [--parses 80]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path
from tempfile import TemporaryDirectory

from bench.fabrics import use_placeholder_secrets
from bench.rollout_scale import intent_text
from gpufabric.config.context import LinkIndex
from gpufabric.config.secrets import PasswordHasher
from gpufabric.fleet.candidates import candidate
from gpufabric.fleet.runner import READER_SWITCH_INTERVAL
from gpufabric.intent import load_intent
from gpufabric.nos.cumulus import nvue
from gpufabric.plan import build_plan


def leaf_candidate() -> str:
    use_placeholder_secrets()
    with TemporaryDirectory() as folder:
        path = Path(folder) / "fabric.yml"
        path.write_text(intent_text(Fraction(1, 8)))
        plan = build_plan(load_intent(str(path)))
    secrets = dict(os.environ)
    index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent, secrets))
    leaf = next(d for d in plan.devices() if d.role == "leaf")
    return candidate(plan, index, leaf.name, secrets)


def per_parse_ms(text: str, threads: int, parses: int) -> float:
    each = max(1, parses // threads)

    def work() -> None:
        for _ in range(each):
            nvue.documents(text)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    start = time.process_time()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return 1000 * (time.process_time() - start) / (each * threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parses", type=int, default=80)
    args = parser.parse_args()
    text = leaf_candidate()
    print(f"a leaf's candidate: {text.count(chr(10))} lines; CPU ms per parse")
    print(f"{'threads':>8} {'5 ms':>8} {f'{READER_SWITCH_INTERVAL * 1000:g} ms':>8}")
    default = sys.getswitchinterval()
    for threads in (1, 8, 40, 80):
        row = []
        for interval in (default, READER_SWITCH_INTERVAL):
            sys.setswitchinterval(interval)
            row.append(per_parse_ms(text, threads, args.parses))
        sys.setswitchinterval(default)
        print(f"{threads:>8} {row[0]:>8.1f} {row[1]:>8.1f}")


if __name__ == "__main__":
    main()
