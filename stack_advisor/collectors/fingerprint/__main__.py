"""``python -m stack_advisor.collectors.fingerprint [--record-nvml FILE]``: print this machine's
fingerprint as JSON; optionally record NVML's answers for replay in tests."""

from __future__ import annotations

import argparse
import json
import sys

from stack_advisor.collectors.fingerprint import fingerprint_host, open_nvml
from stack_advisor.collectors.fingerprint.nvml import record


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m stack_advisor.collectors.fingerprint")
    parser.add_argument("--record-nvml", help="write NVML's answers to this JSON file")
    args = parser.parse_args()
    if args.record_nvml:
        nvml, error = open_nvml()
        answers = record(nvml) if nvml else {"error": error}
        with open(args.record_nvml, "w") as fh:
            json.dump(answers, fh, indent=2)
    fp = fingerprint_host()
    out = {
        "stack": fp.stack.model_dump(mode="json"),
        "accelerator": fp.accelerator.model_dump(mode="json"),
        "host": fp.host.model_dump(mode="json"),
        "placement": fp.placement.model_dump(mode="json"),
        "raw": fp.raw,
    }
    sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
