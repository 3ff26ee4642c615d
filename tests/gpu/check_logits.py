#!/usr/bin/env python3
"""Function check of rewritten checkpoints with transformers (run by tests/gpu/run.sh on the GPU machine).

For each checkpoint X in --checkpoints (X/checkpoint, X/reference.safetensors with int64 input_ids [2, 24]
and fp32 logits [2, 24, V] computed on CPU in float32), loads with
AutoModelForCausalLM.from_pretrained(dir, dtype=torch.float32) on the CPU:
  - X/checkpoint (the source; shows this machine reproduces the reference),
  - WORK/X-router (routepack-rewrite --permute-router output): PASS when max |logits - reference| <= 1e-5,
  - WORK/X-apply (apply without router permutation): informational; it should differ, since such a
    checkpoint needs a dispatcher that maps logical to physical expert ids.
Prints PASS / FAIL / INFO lines, a LOGITS line per checkpoint, and exits 1 on any FAIL.
"""
import argparse
import os
import sys
import time

TOLERANCE = 1e-5


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoints", required=True, help="folder with X/checkpoint and X/reference.safetensors")
    ap.add_argument("--work", required=True, help="folder with X-router and X-apply outputs")
    args = ap.parse_args()

    t0 = time.time()
    try:
        import torch
        import transformers
        from safetensors.torch import load_file
        from transformers import AutoModelForCausalLM
    except Exception as e:  # report, do not crash: run.sh counts the FAIL line
        print("FAIL check_logits: cannot import torch / transformers / safetensors: %s" % e)
        return 1
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    print("torch %s, transformers %s (imported in %.1f s)" % (torch.__version__, transformers.__version__, time.time() - t0))

    def logits_of(folder, input_ids):
        try:
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        except TypeError:  # transformers before the `dtype` keyword
            model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
        model.eval()
        with torch.no_grad():
            return model(input_ids=input_ids).logits.float()

    failures = 0
    summary = []
    names = sorted(d for d in os.listdir(args.checkpoints)
                   if os.path.isfile(os.path.join(args.checkpoints, d, "reference.safetensors")))
    if not names:
        print("FAIL check_logits: no checkpoint with reference.safetensors under %s" % args.checkpoints)
        return 1
    for name in names:
        ref = load_file(os.path.join(args.checkpoints, name, "reference.safetensors"))
        ids, want = ref["input_ids"], ref["logits"].float()
        diffs = {}
        for label, folder in (("source", os.path.join(args.checkpoints, name, "checkpoint")),
                              ("permute-router", os.path.join(args.work, name + "-router")),
                              ("apply (no router)", os.path.join(args.work, name + "-apply"))):
            if not os.path.isdir(folder):
                diffs[label] = None
                if label == "permute-router":
                    print("FAIL %s %s: %s is missing (the rewrite failed)" % (name, label, folder))
                    failures += 1
                continue
            try:
                got = logits_of(folder, ids)
            except Exception as e:
                diffs[label] = None
                print("FAIL %s %s: transformers cannot run %s: %s" % (name, label, folder, str(e).splitlines()[0] if str(e) else type(e).__name__))
                failures += 1
                continue
            if got.shape != want.shape:
                diffs[label] = None
                print("FAIL %s %s: logits shape %s, reference %s" % (name, label, tuple(got.shape), tuple(want.shape)))
                failures += 1
                continue
            d = (got - want).abs().max().item()
            diffs[label] = d
            if label == "permute-router":
                ok = d <= TOLERANCE
                failures += 0 if ok else 1
                note = ""
                if not ok and diffs.get("source") is not None and diffs["source"] > TOLERANCE:
                    note = " (the source itself differs by %.3g here: this machine's torch/transformers do not reproduce the reference)" % diffs["source"]
                print("%s %s --permute-router export: max |logits - reference| = %.3g (<= %g)%s"
                      % ("PASS" if ok else "FAIL", name, d, TOLERANCE, note))
            elif label == "source":
                print("INFO %s source checkpoint: max |logits - reference| = %.3g" % (name, d))
            else:
                print("INFO %s apply without router permutation: max |logits - reference| = %.3g (%s)"
                      % (name, d, "changes the function, as expected without a dispatcher" if d > TOLERANCE
                         else "unchanged: unexpected for a placement that moves experts"))
        fmt = lambda v: "n/a" if v is None else "%.3g" % v
        summary.append("LOGITS %-12s source %-9s permute-router %-9s apply(no router) %s"
                       % (name, fmt(diffs.get("source")), fmt(diffs.get("permute-router")), fmt(diffs.get("apply (no router)"))))
    print("\n".join(summary))
    print("check_logits: %d checkpoint(s), %d failure(s), %.1f s" % (len(names), failures, time.time() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
