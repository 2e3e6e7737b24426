"""``python -m klear_lib.configs STAGE PRESET [--world-size N] [--set k=v ...] [--show field ...]``: the final config
as JSON, or the named fields as ``name=value`` (the launch scripts read the batch layout this way). A bad name or
value stops with one line naming it (``typed_overrides``): an unknown field with the closest names, a value of the
wrong type or out of the field's range."""
from __future__ import annotations

import argparse
import json

from klear_lib.configs import PRESET_NAMES, STAGES, get_config, to_dict
from klear_lib.configs.base import typed_overrides, unknown_field_message

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m klear_lib.configs", description=(
        "Print a stage's final config as JSON, or the fields named with --show as name=value. "
        "Example: python -m klear_lib.configs rl_math tiny --set learning_rate=2e-5 --show learning_rate"))
    parser.add_argument("stage", choices=sorted(STAGES), help="the stage whose config to print")
    parser.add_argument("preset", choices=PRESET_NAMES, help="the scale: ci, tiny or full")
    parser.add_argument("--world-size", type=int, default=1, help="lay a training stage out over N ranks")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="override fields; each value is checked against the field's type and range")
    parser.add_argument("--show", nargs="*", default=None, metavar="FIELD", help="print only these fields")
    args = parser.parse_args(argv)
    cls = type(STAGES[args.stage][args.preset])
    try:
        overrides = typed_overrides(cls, args.set)
        cfg = get_config(args.stage, args.preset, world_size=args.world_size, **overrides)
    except (KeyError, ValueError) as err:
        parser.exit(1, f"{parser.prog}: error: {str(err).strip(chr(34))}\n")
    if args.show is None:
        print(json.dumps(to_dict(cfg), indent=1, sort_keys=True))
        return
    if missing := [name for name in args.show if not hasattr(cfg, name)]:
        parser.exit(1, f"{parser.prog}: error: {unknown_field_message(cls, missing[0])}\n")
    print(" ".join(f"{name}={getattr(cfg, name)}" for name in args.show))


if __name__ == "__main__":
    main()
