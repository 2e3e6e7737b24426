"""``python -m klear_lib.configs STAGE PRESET [--world-size N] [--set k=v ...] [--show field ...]``: the final config
as JSON, or the named fields as ``name=value`` (the launch scripts read the batch layout this way)."""
from __future__ import annotations

import argparse
import json

from klear_lib.configs import STAGES, get_config, to_dict
from klear_lib.configs.base import parse_overrides


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m klear_lib.configs", description=__doc__.split(":")[0])
    parser.add_argument("stage", choices=sorted(STAGES))
    parser.add_argument("preset")
    parser.add_argument("--world-size", type=int, default=1)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--show", nargs="*", default=None, metavar="FIELD")
    args = parser.parse_args(argv)
    overrides = parse_overrides(args.set)
    try:
        cfg = get_config(args.stage, args.preset, world_size=args.world_size, **overrides)
    except (KeyError, ValueError) as err:
        parser.exit(1, f"{parser.prog}: {err}\n")
    if args.show is None:
        print(json.dumps(to_dict(cfg), indent=1, sort_keys=True))
    else:
        print(" ".join(f"{name}={getattr(cfg, name)}" for name in args.show))


if __name__ == "__main__":
    main()
